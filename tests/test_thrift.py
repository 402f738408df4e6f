"""The same materialization and layout test through dbt-spark's thrift method,
against a Spark Thrift Server: everything the package does is plain SQL."""

from __future__ import annotations

import pytest

from spark_bucketing.files import local_path
from spark_bucketing.metadata import ThriftClient, read_table_metadata
from tests.support.dbt_project import DbtProject, failure_text
from tests.support.layout import check_files
from tests.support.thrift_server import ThriftServer

SQL = """
select cast(id % 211 as int) as customer_id, cast(id % 3 as string) as region,
       concat('item-', id) as item, id as event_id
from range(0, 6000, 1, 12)
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    srv = ThriftServer(tmp_path_factory.mktemp("thrift"))
    srv.start()
    yield srv
    srv.stop()


@pytest.fixture(scope="module")
def thrift_project(server, tmp_path_factory, dbt_project):
    project = DbtProject(
        tmp_path_factory.mktemp("dbt-thrift"),
        schema="t_thrift",
        package_dir=dbt_project.package_dir,
        profile_overrides={"method": "thrift", "host": "127.0.0.1", "port": server.port},
    )
    project.setup()
    for family in ("hive", "spark"):
        project.write_model(
            f"events_{family}",
            SQL,
            {
                "materialized": "bucketed_table",
                "clustered_by": "customer_id",
                "buckets": 6,
                "bucket_hash": family,
                "partition_by": "region",
                "sorted_by": ["event_id"],
            },
        )
    project.write_file(
        "models/schema.yml",
        "version: 2\nmodels:\n"
        + "".join(
            f"  - name: events_{f}\n    data_tests: [spark_bucketing.bucket_layout]\n" for f in ("hive", "spark")
        ),
    )
    return project


def test_build_and_test_through_thrift(spark, server, thrift_project):
    thrift_project.run()
    # A second run replaces the tables through the swap.
    thrift_project.run()
    test = thrift_project.dbt("test")
    assert test.success, failure_text(test)
    client = ThriftClient("127.0.0.1", server.port)
    for family in ("hive", "spark"):
        # The second run built into the model's other folder: ask the server where the table is now.
        meta = read_table_metadata(client, f"t_thrift.events_{family}")
        location = local_path(meta.location)
        assert location.parent == server.warehouse / "t_thrift.db"
        report = check_files(
            spark,
            location,
            "parquet",
            ["customer_id"],
            6,
            family,
            ["event_id"],
            {"customer_id": "int", "event_id": "bigint"},
        )
        assert report.bad_names == []
        assert report.partitions == 3
        assert report.files == 18 and report.max_files_per_bucket == 1
        assert report.misplaced_rows == 0 and report.unsorted_rows == 0
        assert report.rows == 6000


def test_partitions_command_reads_metadata_through_thrift(server, thrift_project):
    import io
    from contextlib import redirect_stdout

    from spark_bucketing import cli

    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["partitions", "t_thrift.events_hive", "--thrift", f"127.0.0.1:{server.port}"]) == 0
    text = out.getvalue()
    assert "catalog declares: 6 buckets on (customer_id), hive hash, sorted by (event_id)" in text
    assert "region=0" in text and "region=2" in text
