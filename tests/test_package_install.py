"""Installed into another project, the package brings its macros, materializations and tests and no node
of its own: no model, seed, snapshot, analysis, test or schema entry (issue 82). The demo is a project of
its own (demo/) that installs the package as a user's project does."""

from __future__ import annotations

from pathlib import Path

import yaml
from dbt.cli.main import dbtRunner

REPO_ROOT = Path(__file__).resolve().parents[1]
# Every model name the package's demo has used (models/demo/ until issue 82), which a user's project may
# well have too (jaffle_shop has `orders`; most tutorials have `users`).
DEMO_MODELS = ["order_events", "order_lines", "orders", "user_order_totals", "users"]


def test_installed_package_adds_no_node_to_the_project(dbt_project):
    """A project whose models have every name the demo uses, each described in a schema.yml, parses and lists
    its own nodes only (it failed: "dbt found two schema.yml entries for the same resource named users")."""
    for name in DEMO_MODELS:
        dbt_project.write_model(name, "select 1 as user_id", {"materialized": "view"})
    entries = [
        {"name": name, "description": f"the project's own {name}", "columns": [{"name": "user_id"}]}
        for name in DEMO_MODELS
    ]
    dbt_project.write_file("models/own.yml", yaml.safe_dump({"version": 2, "models": entries}))
    try:
        result = dbt_project.dbt("ls", "--output", "json", "--output-keys", "unique_id resource_type")
        assert result.success, result.exception
        nodes = sorted(result.result)
        assert all('"unique_id": "model.sb_it.' in n for n in nodes), nodes
        assert len(nodes) == len(DEMO_MODELS)
    finally:
        for name in DEMO_MODELS:
            dbt_project.remove_model(name)
        (dbt_project.root / "models" / "own.yml").unlink()


def test_the_demo_project_lists_the_demo_models(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_BUCKETING_DEMO_DIR", str(tmp_path))
    common = ["--project-dir", str(REPO_ROOT / "demo"), "--profiles-dir", str(REPO_ROOT / "demo")]
    common += ["--log-path", str(tmp_path / "logs")]
    # The demo's dbt_packages/ lives in demo/ (git ignores it), as `dbt deps` makes it for any project.
    assert dbtRunner().invoke(["deps", "--quiet", *common]).success
    result = dbtRunner().invoke(
        ["ls", "--resource-type", "model", "--output", "name", "--target-path", str(tmp_path / "target"), *common]
    )
    assert result.success, result.exception
    assert sorted(result.result) == DEMO_MODELS
