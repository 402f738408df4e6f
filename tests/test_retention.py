"""A replaced partition folder outlives its switch by replaced_folders_retention
(a query that listed it before the switch may still read it), recorded in the
table's properties, and goes with the first commit after the retention ends."""

from __future__ import annotations

import json
import time

from harness.spark import table_location
from spark_bucketing.files import data_files, local_path
from tests.support.incremental import Expected, model_sql, table_rows


def _run(spark, project, name, expected, vars_, retention):
    sql = model_sql(vars_).replace("verify_layout=", f"replaced_folders_retention={retention}, verify_layout=", 1)
    (project.root / "models" / f"{name}.sql").write_text(sql)
    project.run(name)
    expected.apply(spark, vars_)
    assert table_rows(spark, f"{project.schema}.{name}") == expected.rows()


def _kept(spark, table):
    props = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    return {k: v for k, v in props.items() if k.startswith("spark_bucketing.replaced.")}


def test_replaced_folders_are_kept_for_their_retention_then_deleted(spark, dbt_project):
    name = "retained"
    table = f"{dbt_project.schema}.{name}"
    expected = Expected()
    _run(spark, dbt_project, name, expected, {"days": [0, 1]}, 60)
    old_day_1 = table_location(spark, table) / "day=2024-01-02"
    assert data_files(old_day_1)

    _run(spark, dbt_project, name, expected, {"days": [1], "tag": 1}, 60)
    # The switch moved day 1 away from its folder; the folder stays, recorded with the time of the switch.
    assert data_files(old_day_1)
    (kept,) = _kept(spark, table).values()
    assert local_path(json.loads(kept)["folder"]) == old_day_1

    time.sleep(2)
    _run(spark, dbt_project, name, expected, {"days": [0], "tag": 2}, 1)
    # Past its retention: deleted by this commit, its record gone; day 0's old folder is kept in its place.
    assert not old_day_1.exists() or not data_files(old_day_1)
    (kept,) = _kept(spark, table).values()
    assert local_path(json.loads(kept)["folder"]) == table_location(spark, table) / "day=2024-01-01"
