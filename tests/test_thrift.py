"""The package through dbt-spark's thrift method, against a Spark Thrift
Server whose work runs on a standalone cluster (a Master and two Workers, each
executor a JVM of its own) and whose catalog is a Hive metastore service on
Postgres: builds, incremental runs, the layout and metadata
tests, and the checker with its default connection (the dbt target). The
same metastore service is shared by dbt runs with method: session, in a
process of its own, as production runs one catalog for two engines: a table
built through one is rewritten through the other."""

from __future__ import annotations

import io
import json
import os
import subprocess
from contextlib import redirect_stdout

import pytest
from pyspark.sql import functions as F

from harness.dbt_host import FRESH_READS
from harness.dbt_process import DBT, REPO_ROOT, DbtProcessProject
from harness.dbt_project import DbtProject, failure_text, with_vars
from harness.spark import TEST_JVM_FLAGS
from harness.thrift_server import ThriftServer
from spark_bucketing import extension
from spark_bucketing.files import bucket_of, input_file_path, local_path
from spark_bucketing.metadata import ThriftClient, read_table_metadata
from tests.support.cluster import StandaloneCluster
from tests.support.hive_oracle import HiveOracle
from tests.support.layout import check_files

SQL = """
select cast(id % 211 as int) as customer_id, cast(id % 3 as string) as region,
       concat('item-', id) as item, id as event_id
from range(0, 6000, 1, 12)
"""


# Each run writes the days of var('days'); a later run rewrites one of them.
DAILY_SQL = """
select cast(id % 97 as int) as customer_id, id as event_id, concat('r{{ var("tag", 0) }}-', id) as payload,
       date_add(date'2024-01-01', d) as day
from range(0, 3000, 1, 6) cross join (select explode(array({{ var('days', [0, 1]) | join(', ') }})) as d)
"""
DAILY_CONFIG = {
    "materialized": "bucketed_incremental",
    "clustered_by": "customer_id",
    "buckets": 4,
    "bucket_hash": "spark",
    "partition_by": "day",
    "incremental_strategy": "insert_overwrite",
}
NO_BROADCAST = "spark.sql.autoBroadcastJoinThreshold"
LOOKUP_JOIN_SQL = """
select a.customer_id, count(*) as n
from {{ ref('events_spark') }} a
join {{ ref('events_spark') }} b on a.customer_id = b.customer_id
where a.customer_id = 7
group by a.customer_id
"""

HIVE_JOIN_SQL = """
select a.region, count(*) as n, sum(a.event_id - b.event_id) as d
from {{ ref('events_hive') }} a
join {{ ref('events_hive') }} b on a.customer_id = b.customer_id
group by a.region
"""


def layout_and_metadata_tests(model: str) -> str:
    """A models: entry of a schema file attaching the package's two tests to `model`."""
    return f"  - name: {model}\n    data_tests: [spark_bucketing.bucket_layout, spark_bucketing.bucket_metadata]\n"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    nodes = StandaloneCluster(tmp_path_factory.mktemp("cluster"), workers=2)
    nodes.start()
    yield nodes
    nodes.stop()


@pytest.fixture(scope="module")
def server(tmp_path_factory, cluster, metastore):
    # With the session extension on, as a user enables it: every build, test
    # and checker run below goes through it; spark.jars ships it to the executors.
    # Its catalog is a metastore service on Postgres, as production runs it.
    # Hive 2.3's metastore answers a filter on a date partition column with
    # SQL that casts every table's partition values to date; on Postgres that
    # fails once another table has a value such as '1', and the query fails
    # (INTERNAL_ERROR_HIVE_METASTORE_PARTITION_FILTER): the fallback Spark's
    # error names, as docs/cluster.md tells users.
    srv = ThriftServer(
        tmp_path_factory.mktemp("thrift"),
        master=cluster.url,
        conf={
            **extension.spark_settings(extension.build_jar()),
            "spark.sql.hive.metastorePartitionPruningFallbackOnException": "true",
        },
        metastore=metastore,
    )
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
    project.write_model("daily", DAILY_SQL, DAILY_CONFIG)
    project.write_model("lookup_join", LOOKUP_JOIN_SQL, {"materialized": "view"})
    project.write_model("hive_join", HIVE_JOIN_SQL, {"materialized": "view"})
    project.write_file(
        "models/schema.yml",
        "version: 2\nmodels:\n"
        + "".join(f"  - name: events_{f}\n    data_tests: [spark_bucketing.bucket_layout]\n" for f in ("hive", "spark"))
        + layout_and_metadata_tests("daily"),
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
        if family == "hive":
            # The executors numbered the buckets as Hive's own code does.
            oracle = HiveOracle(spark)
            placed = (
                spark.read.parquet(str(location))
                .select("customer_id", F.input_file_name().alias("file"))
                .distinct()
                .collect()
            )
            assert len(placed) == 211 * 3
            wrong = [
                (r.customer_id, r.file)
                for r in placed
                if bucket_of(input_file_path(r.file).name) != oracle.bucket_number([r.customer_id], ["int"], 6)
            ]
            assert wrong == []


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


def test_the_work_runs_on_the_cluster_executors(cluster, server, thrift_project):
    """The builds above ran their tasks in the workers' executor JVMs, not in the server's."""
    thrift_project.run("events_spark")
    executors = cluster.executor_dirs()
    assert len(executors) >= 2, executors
    assert all((e / "stderr").exists() for e in executors)


def test_incremental_runs_and_metadata_on_the_cluster(spark, server, thrift_project):
    thrift_project.run("daily", extra=("--full-refresh", "--vars", '{"days": [0, 1, 2]}'))
    thrift_project.run("daily", extra=("--vars", '{"days": [1], "tag": 1}'))
    test = thrift_project.dbt("test", "--select", "daily")
    assert test.success, failure_text(test)
    client = ThriftClient("127.0.0.1", server.port)
    rows = dict(client.query("select payload like 'r1-%', count(*) from t_thrift.daily group by 1"))
    assert rows == {True: 3000, False: 6000}
    meta = read_table_metadata(client, "t_thrift.daily")
    assert [p.files for p in meta.partitions] == [4, 4, 4]


APPEND_SQL = """
select cast(id as int) as k, concat('{{ var("tag", "a") }}-', id) as v, date'2024-01-01' as day
from range({{ var("start", 0) }}, {{ var("start", 0) }} + 200, 1, 2)
"""


def test_parallel_appends_that_add_files_all_land(server, thrift_project):
    """Four `dbt run`s, each a process of its own, append to one day of one
    table through the Thrift Server at once, adding files
    (max_files_per_bucket): every run lands and each row is there once.
    Another run's append to the day since a run planned is no conflict for
    an append that adds files; its files join those the others left, under
    the commit lock (the first switch takes it itself where no other run is
    about; the others mark themselves and wait their turn)."""
    name = "par_append"
    thrift_project.write_model(
        name,
        APPEND_SQL,
        {
            "materialized": "bucketed_incremental",
            "incremental_strategy": "append",
            "clustered_by": "k",
            "buckets": 4,
            "bucket_hash": "spark",
            "partition_by": "day",
            "max_files_per_bucket": 8,
        },
    )
    thrift_project.run(name, extra=("--full-refresh",))
    root = thrift_project.root
    runs = []
    for i in range(1, 5):
        out = root / f"par{i}"
        env = {
            **os.environ,
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DBT_TARGET_PATH": str(out),
            "DBT_LOG_PATH": str(out),
        }
        args = ["run", "--select", name, "--vars", json.dumps({"tag": f"p{i}", "start": 1000 * i})]
        runs.append(
            subprocess.Popen(
                [DBT, *args, "--project-dir", str(root), "--profiles-dir", str(root)],
                cwd=root,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
        )
    outputs = [r.communicate()[0] for r in runs]
    assert [r.returncode for r in runs] == [0] * 4, "\n".join(o[-3000:] for o in outputs)
    client = ThriftClient("127.0.0.1", server.port)
    counts = dict(client.query(f"select split(v, '-')[0], count(distinct k) from t_thrift.{name} group by 1"))
    assert counts == {"a": 200, "p1": 200, "p2": 200, "p3": 200, "p4": 200}
    assert client.query(f"select count(*) from t_thrift.{name}")[0][0] == 1000
    (day,) = read_table_metadata(client, f"t_thrift.{name}").partitions
    assert day.files == 20
    test = thrift_project.dbt("test", "--select", name)
    assert test.success, failure_text(test)


def _checked_live(project: DbtProject, model: str) -> tuple[int, str]:
    """`spark-bucketing check --catalog live --verify` of one model through the project's own dbt target (no
    --thrift, no --state-dir): its exit code and its JSON report."""
    from spark_bucketing import cli

    root = str(project.root)
    out = io.StringIO()
    with redirect_stdout(out):
        code = cli.main(
            ["check", "--project-dir", root, "--profiles-dir", root, "--select", model]
            + ["--catalog", "live", "--verify", "--format", "json", "--conf", f"{NO_BROADCAST}=-1"]
        )
    return code, out.getvalue()


def test_check_verifies_through_the_thrift_dbt_target(server, thrift_project):
    """No --thrift, no --state-dir: the checker reads the live catalog and
    asks for plans through the project's own dbt target (method thrift)."""
    thrift_project.run("events_spark", "lookup_join")
    code, out = _checked_live(thrift_project, "lookup_join")
    assert code == 0
    (model,) = json.loads(out)["models"]
    kinds = sorted(f["kind"] for f in model["findings"])
    assert kinds == ["aggregate", "join", "lookup", "lookup"], model
    assert all(f["verified"] is True for f in model["findings"]), model
    join = next(f for f in model["findings"] if f["kind"] == "join")
    assert join["shuffle_free"] is True
    assert [f["buckets_read"] for f in model["findings"] if f["kind"] == "lookup"] == [1, 1]


# A package table keyed by a string, joined with events_spark's int key: as is and through a cast.
STRING_KEYED_SQL = f"select cast(customer_id as string) as customer_id, event_id from ({SQL})"
TYPE_MISMATCH_SQL = """
select a.event_id, b.event_id as other
from {{ ref('events_spark') }} a join {{ ref('events_string') }} b on a.customer_id = b.customer_id
union all
select a.event_id, b.event_id
from {{ ref('events_spark') }} a join {{ ref('events_string') }} b on cast(a.customer_id as string) = b.customer_id
"""


def test_the_checker_takes_the_thrift_servers_ansi_mode_and_dbts_target_path(
    server, thrift_project, tmp_path, monkeypatch
):
    """dbt-spark asks each connection for spark.sql.ansi.enabled=false; a Thrift Server ignores it, and dbt's
    statements run in ANSI mode (Spark 4's default), where a join of an int key with a string key casts and
    shuffles both sides. The checker reads the mode through the dbt target as the models run, and finds the
    manifest where DBT_TARGET_PATH has dbt write it."""
    client = ThriftClient("127.0.0.1", server.port)
    assert [v for _, v in client.query("set spark.sql.ansi.enabled")] == ["true"]
    thrift_project.write_model(
        "events_string",
        STRING_KEYED_SQL,
        {"materialized": "bucketed_table", "clustered_by": "customer_id", "buckets": 6, "bucket_hash": "spark"},
    )
    thrift_project.write_model("type_mismatch", TYPE_MISMATCH_SQL, {"materialized": "view"})
    thrift_project.run("events_spark", "events_string", "type_mismatch")
    (thrift_project.root / "target" / "manifest.json").unlink(missing_ok=True)
    elsewhere = tmp_path / "elsewhere"
    monkeypatch.setenv("DBT_TARGET_PATH", str(elsewhere))
    code, out = _checked_live(thrift_project, "type_mismatch")
    assert code == 0 and (elsewhere / "manifest.json").exists()
    (model,) = json.loads(out)["models"]
    joins = [f for f in model["findings"] if f["kind"] == "join"]
    assert len(joins) == 2, model
    assert all(f["verified"] is True for f in model["findings"]), model
    # ANSI casts the string key to the int's type: both sides of the first join are shuffled.
    assert joins[0]["shuffle_free"] is False, joins


def test_the_checker_corpus_agrees_with_the_plans_of_the_thrift_server(server, dbt_project, tmp_path_factory):
    """Every corpus query, its tables read and its plans asked through the
    Thrift Server (whose work runs on the cluster). Broadcast off for the
    statement, as in the corpus test: the checker does not model it, and the
    corpus tables are tiny."""
    from tests.test_checker_corpus import CORPUS, S, build_corpus, check_query

    project = DbtProject(
        tmp_path_factory.mktemp("dbt-thrift-corpus"),
        schema=S,
        package_dir=dbt_project.package_dir,
        profile_overrides={"method": "thrift", "host": "127.0.0.1", "port": server.port},
    )
    project.setup()
    client, catalog = build_corpus(project, lambda: ThriftClient("127.0.0.1", server.port))
    failures = {}
    for label, conf, sql in CORPUS:
        try:
            check_query(client, catalog, {**conf, NO_BROADCAST: "-1"}, sql)
        except AssertionError as exc:
            failures[label] = str(exc)[:2000]
    assert not failures, "\n\n".join(f"{k}: {v}" for k, v in failures.items())


def test_hive_hash_join_without_exchange_through_thrift(server, thrift_project):
    """The extension on the Thrift Server (its executors on the cluster): a
    Hive-hash self-join on the bucket column plans no Exchange, and answers as
    the plan with the extension and bucketing off; the checker's model says
    so too (--extension, or read from the server's session), verified
    against the server's plan."""
    import io
    import json
    from contextlib import redirect_stdout

    from spark_bucketing import cli

    thrift_project.run("events_hive", "hive_join")
    join = "select * from t_thrift.events_hive a join t_thrift.events_hive b on a.customer_id = b.customer_id"
    answer = "select region, n, d from t_thrift.hive_join order by region"
    client = ThriftClient("127.0.0.1", server.port)
    try:
        client.query("SET spark.sql.adaptive.enabled=false")
        client.query(f"SET {NO_BROADCAST}=-1")
        on_plan = client.query(f"EXPLAIN {join}")[0][0]
        on_rows = client.query(answer)
        client.query(f"SET {extension.SWITCH}=false")
        off_plan = client.query(f"EXPLAIN {join}")[0][0]
        client.query("SET spark.sql.sources.bucketing.enabled=false")
        off_rows = client.query(answer)
    finally:
        client.connection.close()
    assert "HiveHashBucketedScan" in on_plan and "Exchange" not in on_plan, on_plan
    assert off_plan.count("Exchange hashpartitioning") == 2, off_plan
    assert [tuple(r) for r in on_rows] == [tuple(r) for r in off_rows] and len(on_rows) == 3

    def check(*conf: str) -> tuple[dict, dict]:
        root = str(thrift_project.root)
        out = io.StringIO()
        with redirect_stdout(out):
            code = cli.main(
                ["check", "--project-dir", root, "--profiles-dir", root, "--select", "hive_join"]
                + ["--catalog", "live", "--verify", "--format", "json", *conf]
            )
        assert code == 0
        (model,) = json.loads(out.getvalue())["models"]
        (join_finding,) = [f for f in model["findings"] if f["kind"] == "join"]
        return model, join_finding

    # --verify plans under the --conf settings: broadcast off, the sort-merge join the checker models.
    model, found = check("--extension", "--conf", f"{NO_BROADCAST}=-1")
    assert all(f["verified"] is True for f in model["findings"]), model
    assert found["shuffle_free"] is True and found["plan_shuffles"] == [False, False], found
    # Unsaid, the extension is read from the server's session; said off, it is modelled off and plans off.
    model, found = check("--conf", f"{NO_BROADCAST}=-1")
    assert all(f["verified"] is True for f in model["findings"]), model
    assert found["shuffle_free"] is True, found
    model, found = check("--conf", f"{NO_BROADCAST}=-1", "--conf", f"{extension.SWITCH}=false")
    assert all(f["verified"] is True for f in model["findings"]), model
    assert found["shuffle_free"] is False and found["plan_shuffles"] == [True, True], found


# The daily model, Hive-hash: each run writes the days of var('days'), the tag marks its rows.
SHARED_CONFIG = {**DAILY_CONFIG, "bucket_hash": "hive"}


def test_a_dbt_session_and_the_thrift_server_share_the_metastore_service(metastore, server, tmp_path):
    """A table built by a dbt session (its own JVM) on the metastore service
    is rewritten through the Thrift Server (its work on the cluster), and the
    package's tests, run by the session, prove what both wrote."""
    # The session's two commands in one process (one JVM) that reads the catalog afresh for each.
    session = DbtProcessProject(
        tmp_path / "session",
        schema="t_shared",
        jvm_flags=TEST_JVM_FLAGS,
        one_process=True,
        **metastore.spark_conf(),
        **FRESH_READS,
    )
    try:
        session.write_model("shared_daily", with_vars(DAILY_SQL, days=[0, 1]), SHARED_CONFIG)
        session.dbt("run", "--select", "shared_daily")
        assert "shared_daily" in metastore.query('select "TBL_NAME" from "TBLS"').split()

        thrift = DbtProject(
            tmp_path / "thrift",
            schema="t_shared",
            package_dir=REPO_ROOT,
            profile_overrides={"method": "thrift", "host": "127.0.0.1", "port": server.port},
        )
        thrift.setup()
        thrift.write_model("shared_daily", with_vars(DAILY_SQL, days=[1], tag=1), SHARED_CONFIG)
        thrift.run("shared_daily")

        tests_yml = "version: 2\nmodels:\n" + layout_and_metadata_tests("shared_daily")
        (session.root / "models" / "shared_daily.yml").write_text(tests_yml)
        session.dbt("test", "--select", "shared_daily")  # raises if a test fails
    finally:
        session.close()
    assert "PASS=2" in session.output, session.output[-3000:]
    client = ThriftClient("127.0.0.1", server.port)
    rows = dict(client.query("select payload like 'r1-%', count(*) from t_shared.shared_daily group by 1"))
    assert rows == {True: 3000, False: 3000}
    meta = read_table_metadata(client, "t_shared.shared_daily")
    assert [(p.path, p.files) for p in meta.partitions] == [("day=2024-01-01", 4), ("day=2024-01-02", 4)]
