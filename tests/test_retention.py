"""A replaced partition folder outlives its switch by replaced_folders_retention
(a query that listed it before the switch may still read it), recorded in the
table's properties, and goes with the first commit after the retention ends."""

from __future__ import annotations

import json
import re
import time

import pytest

from harness.spark import extension_on, table_location
from spark_bucketing.files import data_files, local_path
from tests.support.incremental import Expected, commit_end, model_sql, statement_body, table_rows

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)


def _run(spark, project, name, expected, vars_, retention) -> list[str]:
    """Runs the model; returns its statements."""
    sql = model_sql(vars_).replace("verify_layout=", f"replaced_folders_retention={retention}, verify_layout=", 1)
    (project.root / "models" / f"{name}.sql").write_text(sql)
    statements: list[str] = []
    assert project.dbt("run", "--select", name, statements=statements).success
    expected.apply(spark, vars_)
    assert table_rows(spark, f"{project.schema}.{name}") == expected.rows()
    return statements


def _property_statements(statements: list[str]) -> list[str]:
    """The statements of their own that set or unset a replaced folder's property."""
    return [
        s
        for s in map(statement_body, statements)
        if re.match(r"alter table \S+ (set|unset) tblproperties", s) and "spark_bucketing.replaced." in s
    ]


def _end_payload(statements: list[str]) -> dict:
    """The payload of the end of the commit: the extension's statement of its own, or the switch's "end"."""
    return commit_end(statements)[1]


def _kept(spark, table):
    props = {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}
    return {k: v for k, v in props.items() if k.startswith("spark_bucketing.replaced.")}


@pytest.mark.parametrize("extension", [False, True], ids=["statements", "extension"])
def test_replaced_folders_are_kept_for_their_retention_then_deleted(spark, dbt_project, extension):
    """With the session extension, the statement that ends the commit
    writes the kept folders' properties and unsets the expired ones: no
    statement of their own."""
    name = f"retained_{'ext' if extension else 'sql'}"
    table = f"{dbt_project.schema}.{name}"
    expected = Expected()
    with extension_on(spark, extension):
        _run(spark, dbt_project, name, expected, {"days": [0, 1]}, 60)
        old_day_1 = table_location(spark, table) / "day=2024-01-02"
        assert data_files(old_day_1)

        kept_run = _run(spark, dbt_project, name, expected, {"days": [1], "tag": 1}, 60)
        # The switch moved day 1 away from its folder; the folder stays, recorded with the time of the switch.
        assert data_files(old_day_1)
        (kept,) = _kept(spark, table).values()
        assert local_path(json.loads(kept)["folder"]) == old_day_1

        time.sleep(2)
        expiring_run = _run(spark, dbt_project, name, expected, {"days": [0], "tag": 2}, 1)
    if extension:
        assert _property_statements(kept_run) == [] and _property_statements(expiring_run) == []
        assert list(_end_payload(kept_run)["table_properties"].values()) == [kept]
        assert len(_end_payload(expiring_run)["unset_properties"]) == 1
    else:
        assert [s.split()[3] for s in _property_statements(kept_run)] == ["set"]
        assert [s.split()[3] for s in _property_statements(expiring_run)] == ["set", "unset"]
    # Past its retention: deleted by this commit, its record gone; day 0's old folder is kept in its place.
    assert not old_day_1.exists() or not data_files(old_day_1)
    (kept,) = _kept(spark, table).values()
    assert local_path(json.loads(kept)["folder"]) == table_location(spark, table) / "day=2024-01-01"
