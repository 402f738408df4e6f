"""Installed into another project, the package brings its macros, materialization
and tests but builds none of its demo models; under the demo's profile it builds them."""

from __future__ import annotations

from pathlib import Path

from dbt.cli.main import dbtRunner

REPO_ROOT = Path(__file__).resolve().parents[1]


def test_installed_package_builds_no_demo_models(dbt_project):
    dbt_project.write_model("own_model", "select 1 as k", {"materialized": "view"})
    result = dbt_project.dbt("ls", "--resource-type", "model", "--output", "name")
    assert result.success
    assert sorted(result.result) == ["own_model"]


def test_demo_profile_lists_the_demo_models(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_BUCKETING_DEMO_DIR", str(tmp_path))
    result = dbtRunner().invoke(
        [
            "ls",
            "--resource-type",
            "model",
            "--output",
            "name",
            "--project-dir",
            str(REPO_ROOT),
            "--profiles-dir",
            str(REPO_ROOT / "profiles"),
            "--target-path",
            str(tmp_path / "target"),
            "--log-path",
            str(tmp_path / "logs"),
        ]
    )
    assert result.success
    assert sorted(result.result) == ["order_events", "order_lines", "orders", "user_order_totals", "users"]
