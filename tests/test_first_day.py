"""A new project's first day (issue 82): before any table is built, the package's tests compile as dbt's
own do, so `dbt compile`, `dbt ls`, `dbt docs generate` and `spark-bucketing check` succeed (a CI compiles
before it builds); `dbt test` on a table not built yet stops saying so; `dbt build` runs each test after its
model. In this process, on the worker's Spark; tests/test_readme_project.py runs the README's project in a
process of its own."""

from __future__ import annotations

import io
from contextlib import redirect_stderr, redirect_stdout

import pytest

from harness.dbt_project import failure_text, node_messages
from spark_bucketing import cli

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

MODELS = {
    "fd_users": (
        "select cast(id as int) as user_id, concat('u', id) as email from range(0, 300)",
        {"materialized": "bucketed_table", "clustered_by": "user_id", "buckets": 4, "bucket_hash": "spark"},
    ),
    "fd_events": (
        "select cast(id % 300 as int) as user_id, id as event_id, date_add(date'2026-01-01', cast(id % 3 as int)) as d"
        " from range(0, 900)",
        {
            "materialized": "bucketed_incremental",
            "partition_by": "d",
            "clustered_by": "user_id",
            "buckets": 4,
            "bucket_hash": "spark",
        },
    ),
    "fd_joined": (
        "select u.user_id, count(*) as n from {{ ref('fd_users') }} u join {{ ref('fd_events') }} e"
        " on u.user_id = e.user_id group by u.user_id",
        {"materialized": "view"},
    ),
}
SCHEMA_YML = """
version: 2
models:
  - name: fd_users
    data_tests: [spark_bucketing.bucket_layout]
  - name: fd_events
    data_tests: [spark_bucketing.bucket_layout, spark_bucketing.bucket_metadata]
"""


def _check(project, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        code = cli.main(["check", "--project-dir", str(project.root), "--profiles-dir", str(project.root), *args])
    return code, out.getvalue()


def test_before_anything_is_built_everything_compiles_and_dbt_test_says_what_to_do(spark, dbt_project):
    for name, (sql, config) in MODELS.items():
        dbt_project.write_model(name, sql, config)
    dbt_project.write_file("models/fd.yml", SCHEMA_YML)
    schema = dbt_project.schema
    try:
        statements: list[str] = []
        for command in (["compile"], ["ls"], ["docs", "generate"]):
            result = dbt_project.dbt(*command, statements=statements)
            assert result.success, f"dbt {' '.join(command)}: {result.exception or failure_text(result)}"
        # The tests' SQL, compiled before their tables exist: no row, and no statement read the missing tables.
        compiled = dbt_project.root / "target" / "compiled" / "sb_it" / "models" / "fd.yml"
        layout = (compiled / "spark_bucketing_bucket_layout_fd_users_.sql").read_text()
        assert layout.strip() == "select cast(null as string) as file_path, cast(null as string) as problem where false"
        assert not [s for s in statements if "describe" in s.lower() and "fd_" in s.lower()], statements

        # The checker compiles first, then reads the manifest (static) or plans in Spark (live): no table needed.
        for mode in ("manifest", "live"):
            code, out = _check(dbt_project, "--catalog", mode, "--select", "fd_joined")
            assert code == 0, out
            assert "model.sb_it.fd_joined" in out, out

        result = dbt_project.dbt("test", "--select", "fd_users", "fd_events")
        assert not result.success
        messages = node_messages(result)
        for test, table in (
            ("spark_bucketing_bucket_layout_fd_users_", "fd_users"),
            ("spark_bucketing_bucket_layout_fd_events_", "fd_events"),
            ("spark_bucketing_bucket_metadata_fd_events_", "fd_events"),
        ):
            message = messages[test]
            assert f"{schema}.{table} is not built yet (the catalog has no such table)" in message, message
            assert "Fix: build its model first (`dbt run --select <model>`), or run `dbt build`" in message
            assert "Traceback" not in message and "at org.apache" not in message

        # dbt build: each model, then its tests, all green.
        result = dbt_project.dbt("build", "--select", "fd_users", "fd_events")
        assert result.success, failure_text(result)
        order = [r.node.name for r in result.result.results]
        assert order.index("fd_users") < order.index("spark_bucketing_bucket_layout_fd_users_")
        assert order.index("fd_events") < order.index("spark_bucketing_bucket_metadata_fd_events_")
    finally:
        for name in MODELS:
            dbt_project.remove_model(name)
        (dbt_project.root / "models" / "fd.yml").unlink()
