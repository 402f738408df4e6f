"""One catalog for two engines, as production runs it: a Hive metastore
service on Postgres (harness/metastore_service.py) shared by a Spark
Thrift Server whose work runs on a standalone cluster and by dbt runs with
method: session, each a process of its own. A table built through one is
rewritten through the other, and the package's tests prove what both wrote."""

from __future__ import annotations

import pytest

from harness.dbt_process import REPO_ROOT, DbtProcessProject
from harness.dbt_project import DbtProject, with_vars
from harness.spark import TEST_JVM_FLAGS
from harness.thrift_server import ThriftServer
from spark_bucketing.metadata import ThriftClient, read_table_metadata
from tests.support.cluster import StandaloneCluster

# Each run writes the days of var('days'); the tag marks the run's rows.
DAILY_SQL = """
select cast(id % 97 as int) as customer_id, id as event_id, concat('r{{ var("tag", 0) }}-', id) as payload,
       date_add(date'2024-01-01', d) as day
from range(0, 3000, 1, 6) cross join (select explode(array({{ var('days') | join(', ') }})) as d)
"""
CONFIG = {
    "materialized": "bucketed_incremental",
    "clustered_by": "customer_id",
    "buckets": 4,
    "bucket_hash": "hive",
    "partition_by": "day",
    "incremental_strategy": "insert_overwrite",
}
TESTS_YML = (
    "version: 2\nmodels:\n  - name: shared_daily\n"
    "    data_tests: [spark_bucketing.bucket_layout, spark_bucketing.bucket_metadata]\n"
)


@pytest.fixture(scope="module")
def server(tmp_path_factory, metastore):
    cluster = StandaloneCluster(tmp_path_factory.mktemp("shared-cluster"), workers=1)
    cluster.start()
    srv = ThriftServer(
        tmp_path_factory.mktemp("shared-thrift"),
        master=cluster.url,
        metastore=metastore,
    )
    try:
        srv.start()
        yield srv
    finally:
        srv.stop()
        cluster.stop()


def test_a_dbt_session_and_the_thrift_server_share_the_metastore_service(metastore, server, tmp_path):
    session = DbtProcessProject(
        tmp_path / "session", schema="t_shared", jvm_flags=TEST_JVM_FLAGS, **metastore.spark_conf()
    )
    session.write_model("shared_daily", with_vars(DAILY_SQL, days=[0, 1]), CONFIG)
    session.dbt("run", "--select", "shared_daily")
    assert "shared_daily" in metastore.query('select "TBL_NAME" from "TBLS"').split()

    thrift = DbtProject(
        tmp_path / "thrift",
        schema="t_shared",
        package_dir=REPO_ROOT,
        profile_overrides={"method": "thrift", "host": "127.0.0.1", "port": server.port},
    )
    thrift.setup()
    thrift.write_model("shared_daily", with_vars(DAILY_SQL, days=[1], tag=1), CONFIG)
    thrift.run("shared_daily")

    (session.root / "models" / "shared_daily.yml").write_text(TESTS_YML)
    session.dbt("test", "--select", "shared_daily")  # raises if a test fails
    client = ThriftClient("127.0.0.1", server.port)
    rows = dict(client.query("select payload like 'r1-%', count(*) from t_shared.shared_daily group by 1"))
    assert rows == {True: 3000, False: 3000}
    meta = read_table_metadata(client, "t_shared.shared_daily")
    assert [(p.path, p.files) for p in meta.partitions] == [("day=2024-01-01", 4), ("day=2024-01-02", 4)]
