"""location_root, tblproperties and persist_docs, honoured as dbt-spark does."""

from __future__ import annotations

import re

import pytest

from harness.spark import table_location
from spark_bucketing.files import data_files
from tests.support.layout import check_layout

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)


def _sql(parts: int) -> str:
    return f"select cast(id as int) as k, cast(id % {parts} as string) as p, id as v from range(0, 900, 1, 4)"


@pytest.mark.parametrize("family", ["hive", "spark"])
def test_location_root_alternates_folders_and_leaves_no_stale_files(spark, dbt_project, tmp_path, family):
    schema = dbt_project.schema
    name = f"external_{family}"
    config = {
        "materialized": "bucketed_table",
        "clustered_by": "k",
        "buckets": 4,
        "partition_by": "p",
        "bucket_hash": family,
        "location_root": str(tmp_path / "lake"),
    }
    locations = []
    for parts in (3, 2, 1):  # each run writes fewer partitions than the one before
        dbt_project.write_model(name, _sql(parts), config)
        dbt_project.run(name)
        location = table_location(spark, f"{schema}.{name}")
        locations.append(location)
        report = check_layout(spark, f"{schema}.{name}")
        assert report.rows == 900 and report.max_files_per_bucket == 1 and report.misplaced_rows == 0
        assert spark.sql(f"select count(distinct p) from {schema}.{name}").first()[0] == parts
        # Nothing under the table's folder but the partitions it declares.
        assert {f.parent.name for f in data_files(location)} == {f"p={i}" for i in range(parts)}
        # The previous build's folder is gone: dropping an external table would have kept it.
        assert [p for p in (tmp_path / "lake").iterdir() if p.name.startswith(name)] == [location]
    # Each build in a folder of its run's own under location_root.
    for location in locations:
        assert location.parent == tmp_path / "lake" and re.fullmatch(rf"{name}__dbt_r\d+_[0-9a-f]{{12}}", location.name)
    assert len(set(locations)) == 3


def test_tblproperties_and_persist_docs(spark, dbt_project):
    schema = dbt_project.schema
    dbt_project.write_file(
        "models/documented.yml",
        """
        version: 2
        models:
          - name: documented
            description: "Customers' table"
            columns:
              - name: k
                description: "The customer's key"
        """,
    )
    dbt_project.write_model(
        "documented",
        _sql(2),
        {
            "materialized": "bucketed_table",
            "clustered_by": "k",
            "buckets": 4,
            "tblproperties": {"owner_team": "analytics"},
            "persist_docs": {"relation": True, "columns": True},
        },
    )
    dbt_project.run("documented")
    desc = {
        r.col_name: (r.data_type, r.comment)
        for r in spark.sql(f"describe table extended {schema}.documented").collect()
    }
    assert desc["k"][1] == "The customer's key"
    assert desc["Comment"][0] == "Customers' table"
    assert "owner_team=analytics" in desc["Table Properties"][0]
    assert "bucketing_version=1" in desc["Table Properties"][0]
