"""bucketed_incremental under failures: a model that fails, and a run that
dies at each step of a spec change or a full rebuild, lose no row; the catalog
never declares a spec a partition breaks; the next run finishes the work."""

from __future__ import annotations

import pytest

from harness.dbt_project import node_messages
from spark_bucketing.files import local_path
from tests.support.incremental import (
    Expected,
    declared,
    failed_run,
    old_or_new_rows,
    partition_bucket_counts,
    partition_layout_problems,
    partition_rows,
    run_model,
    step,
    table_properties,
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


def _restoring(spark, table: str) -> list[str]:
    """The table's records of partitions whose bucket spec a run writes back (macros/steps/bucket_specs.sql)."""
    return [k for k in table_properties(spark, table) if k.startswith("spark_bucketing.restoring.")]


def test_replaced_partitions_keep_their_bucket_spec_in_the_metastore(spark, dbt_project):
    """Without the session extension a replaced partition is pointed at its new folder with ALTER TABLE .. SET
    LOCATION, which writes its storage in the metastore without the table's bucket spec (Trino then refuses the
    whole table); the run writes the spec back with LOAD DATA of an empty folder of its own, the partition's folder
    and files as they were. A run that dies between the two leaves a record of the partitions it switched, and the
    next run of the table, whatever it writes, writes their spec back first under the commit lock."""
    expected = Expected()
    name = "inc_respec"
    table = step(spark, dbt_project, name, expected, {"days": [0, 1, 2]})
    step(spark, dbt_project, name, expected, {"days": [1, 2], "tag": 1})
    days = {f"day=2024-01-0{d + 1}" for d in range(3)}
    assert partition_bucket_counts(spark, table) == dict.fromkeys(days, 8)
    assert partition_layout_problems(spark, table) == []
    info = {r.col_name: r.data_type for r in spark.sql(f"describe formatted {table}").collect()}
    (empty,) = local_path(info["Location"]).glob("_bucketing/*/_empty")  # the second run's; the first replaced none
    assert list(empty.iterdir()) == []
    assert _restoring(spark, table) == []

    # Dies after the first of its two SET LOCATIONs: that partition is left without its spec, recorded.
    failed_run(dbt_project, name, {"days": [0, 1], "tag": 2}, "mid_switch")
    assert sorted(partition_bucket_counts(spark, table).values()) == [0, 8, 8]
    assert len(_restoring(spark, table)) == 1, _restoring(spark, table)
    before = partition_rows(spark, table)

    # A run of another day: the dead run's partition gets its spec back, its rows untouched.
    run_model(dbt_project, name, {"days": [3], "tag": 3})
    assert partition_bucket_counts(spark, table) == dict.fromkeys(days | {"day=2024-01-04"}, 8)
    assert _restoring(spark, table) == []
    after = partition_rows(spark, table)
    assert {d: rows for d, rows in after.items() if d != 3} == before and sum(after[3].values()) == 200
    assert partition_layout_problems(spark, table) == []


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
