"""The bucket_layout dbt test fails, naming the file, for each way a table's
files can break its declared spec. Tables are crafted file by file."""

from __future__ import annotations

import shutil

import pytest

from harness.spark import data_files, table_location
from spark_bucketing import hashing

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

N = 4


def _keys_in_bucket(bucket: int, count: int, family: str = "spark") -> list[int]:
    out, k = [], 0
    while len(out) < count:
        if hashing.bucket_id([k], ["int"], N, family) == bucket:
            out.append(k)
        k += 1
    return out


def _write_file(spark, tmp_path, rows, dest, name):
    """One parquet file holding `rows` (k, v) in the given order."""
    scratch = tmp_path / f"scratch-{name}"
    spark.createDataFrame(rows, "k int, v int").coalesce(1).write.parquet(str(scratch))
    (part,) = [p for p in scratch.iterdir() if p.name.startswith("part-")]
    dest.mkdir(parents=True, exist_ok=True)
    shutil.move(str(part), dest / name)


def _good_file(bucket, order=1):
    keys = _keys_in_bucket(bucket, 20)
    return [(k, i) for i, k in enumerate(keys)][::order]


CASES = {
    # name: list of (file name, rows), expected problem fragments
    "sound": (
        [
            ("part-00000-a_00000.c000.snappy.parquet", _good_file(0)),
            ("part-00001-a_00002.c000.snappy.parquet", _good_file(2)),
        ],
        [],
    ),
    "two_files_one_bucket": (
        [
            ("part-00000-a_00001.c000.snappy.parquet", _good_file(1)),
            ("part-00001-a_00001.c000.snappy.parquet", _good_file(1)),
        ],
        ["2 files for bucket 1", "2 files for bucket 1"],
    ),
    "misplaced_rows": (
        [("part-00000-a_00002.c000.snappy.parquet", _good_file(1))],
        ["20 of 20 rows belong to other buckets"],
    ),
    "bucket_id_too_large": (
        [("part-00000-a_00009.c000.snappy.parquet", _good_file(1))],
        ["bucket id 9 >= bucket count 4"],
    ),
    "no_bucket_id": ([("part-00000-a.c000.snappy.parquet", _good_file(1))], ["file name carries no bucket id"]),
    "unsorted": (
        [("part-00000-a_00003.c000.snappy.parquet", _good_file(3, order=-1))],
        ["19 rows out of sorted_by order"],
    ),
}


@pytest.fixture(scope="module")
def crafted(spark, dbt_project, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("crafted")
    schema = dbt_project.schema
    for name, (files, _) in CASES.items():
        location = tmp / name
        for file_name, rows in files:
            _write_file(spark, tmp, rows, location, file_name)
        spark.sql(f"drop table if exists {schema}.{name}")
        spark.sql(
            f"create table {schema}.{name} (k int, v int) using parquet clustered by (k) sorted by (v) "
            f"into {N} buckets location '{location}'"
        )
        assert len(data_files(table_location(spark, f"{schema}.{name}"))) == len(files)
    dbt_project.write_file(
        "models/sources.yml",
        "version: 2\nsources:\n  - name: crafted\n    schema: "
        + schema
        + "\n    tables:\n"
        + "".join(f"      - name: {name}\n        data_tests: [spark_bucketing.bucket_layout]\n" for name in CASES),
    )
    log: list[str] = []
    result = dbt_project.dbt("test", log=log)
    results = {r.node.depends_on.nodes[0].rsplit(".", 1)[1]: r for r in result.result.results}
    return results, log


@pytest.mark.parametrize("name", sorted(CASES))
def test_bucket_layout_reports_each_broken_file(spark, dbt_project, crafted, name, tmp_path):
    _, problems = CASES[name]
    results, log = crafted
    result = results[name]
    if not problems:
        assert str(result.status) == "pass", result.message
        return
    assert str(result.status) == "fail", result.message
    assert result.failures == len(problems)
    # The compiled test lists the offending files and their problems.
    compiled = result.node.compiled_code
    for fragment in problems:
        assert fragment in compiled
    assert name in compiled
    # The logged report says how to repair the table (issue 82).
    (report,) = [m for m in log if m.startswith(f"bucket_layout: {dbt_project.schema}.{name} breaks its bucket spec")]
    assert "To repair: rewrite the table with its model" in report and "--full-refresh" in report
