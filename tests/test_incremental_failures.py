"""bucketed_incremental under failures: a model that fails, and a run that
dies at each step of a spec change or a full rebuild, lose no row; the catalog
never declares a spec a partition breaks; the next run finishes the work."""

from __future__ import annotations

import pytest

from harness.dbt_project import node_messages
from tests.support.incremental import (
    Expected,
    declared,
    failed_run,
    old_or_new_rows,
    partition_layout_problems,
    run_model,
    step,
    table_rows,
)
from tests.test_incremental import _dbt_tests


def test_failed_incremental_run_loses_nothing(spark, dbt_project):
    expected = Expected()
    name = "inc_fail"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1, 2]})
    before = table_rows(spark, table)
    for vars_ in ({"days": [1, 2], "fail": True}, {"days": [1, 2], "fail": True, "strategy": "append"}):
        result = run_model(dbt_project, name, vars_, expect_ok=False)
        assert "model failed on purpose" in node_messages(result)[name]
        assert table_rows(spark, table) == before
        assert partition_layout_problems(spark, table) == []
    step(spark, dbt_project, name, expected, {"days": [2, 3], "tag": 5})
    _dbt_tests(dbt_project, name)


STEPS = ["after_write", "before_switch", "mid_switch", "before_cleanup", "redeclare_before_swap", "redeclare_mid_swap"]


@pytest.mark.parametrize("fail_at", STEPS)
def test_failure_between_steps_of_an_evolution_loses_nothing(spark, dbt_project, fail_at):
    """A run that dies at each step of a spec change: every partition holds
    either its old or its new rows, the catalog declares no spec any partition
    breaks, and the next run finishes the change."""
    expected = Expected()
    name = f"inc_inject_{fail_at}"
    table = step(spark, dbt_project, name, expected, {"bucket_hash": "spark", "days": [0, 1, 2]})
    old = expected.copy()
    vars_ = {"bucket_hash": "spark", "buckets": 4, "on_change": "evolve", "days": [0, 1, 2, 3], "tag": 1}
    new = expected.copy()
    new.apply(spark, vars_)

    failed_run(dbt_project, name, vars_, fail_at)
    if fail_at.endswith("mid_swap"):
        # Between the two renames of a swap the rows sit in the backup entry;
        # the next run puts it back before anything else.
        assert not spark.catalog.tableExists(table)
        table = f"{table}__dbt_backup"
    old_or_new_rows(spark, table, old, new)
    assert not [p for p in partition_layout_problems(spark, table) if "catalog declares" in p]

    run_model(dbt_project, name, vars_)
    table = f"{dbt_project.schema}.{name}"
    assert table_rows(spark, table) == new.rows()
    assert partition_layout_problems(spark, table) == []
    assert declared(spark, table)["buckets"] == 4
    _dbt_tests(dbt_project, name)


@pytest.mark.parametrize("fail_at", ["before_swap", "mid_swap"])
def test_failure_during_a_full_rebuild_keeps_the_old_table(spark, dbt_project, fail_at):
    expected = Expected()
    name = f"inc_rebuild_{fail_at}"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1]})
    before = table_rows(spark, table)
    vars_ = {"days": [1, 2], "buckets": 6, "on_change": "rebuild", "tag": 1}
    run_model(dbt_project, name, vars_, expect_ok=False, fail_at=fail_at)
    # mid_swap leaves the live table under its backup name: the next run puts it back first.
    assert table_rows(spark, table if fail_at == "before_swap" else f"{table}__dbt_backup") == before
    step(spark, dbt_project, name, expected, vars_)
    assert declared(spark, table)["buckets"] == 6
