"""The checker's static verdicts against Spark's physical plans: for every
query of the corpus, and every join side and aggregation in it, the static
answer (shuffle or not) equals the plan's (an Exchange under it or not)."""

from __future__ import annotations

import json
import os
from collections import Counter

import pytest

from harness.dbt_project import DbtProject
from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import SESSION_KEYS, SPARK_VERSION
from spark_bucketing.checker.relations import catalog_to_json, relation_from_live
from spark_bucketing.checker.verify import explain, scans, session_conf, session_values, verify
from spark_bucketing.connection import DbtTargetClient
from spark_bucketing.metadata import SparkClient
from tests.support.checker_corpus import CORPUS, FROZEN, TABLES, S, check_settings
from tests.support.incremental import run_model
from tests.support.suggested_settings import try_suggested_settings, try_suggested_specs

AUTO_BUCKETED_SCAN = "spark.sql.sources.bucketing.autoBucketedScan.enabled"


def build_corpus(project: DbtProject, connect) -> tuple:
    """The package-built corpus tables through `project`, then the others
    through the client `connect()` opens (after dbt's runs, which reset the
    connections of dbt's adapter); (client, catalog)."""
    # An evolving table, built by the package: days 0-1 with 8 buckets, day 2 with 16.
    base = {"bucket_hash": "spark", "on_change": "evolve"}
    run_model(project, "ev", {**base, "days": [0, 1]})
    run_model(project, "ev", {**base, "days": [2], "buckets": 16})
    # Sorted by its bucket column, one file per bucket per day.
    run_model(project, "sk", {"bucket_hash": "spark", "clustered_by": "id", "days": [0, 1]})
    client = connect()
    client.query(f"create database if not exists {S}")
    for name, (cols, bucketing, storage) in TABLES.items():
        client.query(f"drop table if exists {S}.{name}")
        if storage.startswith("using"):
            client.query(f"create table {S}.{name} ({cols}) {storage} {bucketing or ''}")
        else:
            client.query(f"create table {S}.{name} ({cols}) {bucketing or ''} {storage}")
        select = ", ".join(
            f"cast(id % 50 as {t.split()[1]})" if not t.split()[1] == "string" else "cast(id as string)"
            for t in cols.split(", ")
        )
        client.query(f"insert into {S}.{name} select {select} from range(0, 200)")
    catalog = Catalog()
    for name in [*TABLES, "ev", "sk"]:
        catalog.add(relation_from_live(client, f"{S}.{name}"))
    assert catalog.get(f"{S}.ev").evolving
    return client, catalog


def check_query(client, catalog: Catalog, conf: dict, sql: str) -> None:
    """The checker's findings for one corpus query against the plans Spark
    gives `client` under `conf`."""
    sql = sql.format(S=S)
    conf = {"spark.sql.ansi.enabled": "false", **conf}
    # As `check` models a connected session: what `conf` leaves unsaid, the session says.
    findings = analyze_sql(sql, catalog, check_settings(conf, session_values(client, SESSION_KEYS)))
    assert findings, "the checker found nothing to judge"
    assert not any(f.unknown for f in findings), [f.to_json() for f in findings]
    with session_conf(client, conf):
        results = verify(client, sql, findings)
        found = scans(explain(client, sql, {AUTO_BUCKETED_SCAN: "false"}))
    pruned = [(table, selected[0]) for table, selected in found if selected and selected[0] < selected[1]]
    report = [
        (f.kind, [(s.relation, s.keys, s.shuffle, s.reasons, s.sort) for s in f.sides], r)
        for f, r in zip(findings, results, strict=True)
    ]
    assert all(r["matched"] for r in results), "\n".join(map(str, report))
    # Every shuffling side says why.
    assert all(s.reasons for f in findings for s in f.sides if s.shuffle), report
    # Every scan whose buckets the plan prunes has its lookup finding.
    lookups = Counter((f.sides[0].relation, f.buckets_read) for f in findings if f.kind == "lookup")
    assert not Counter(pruned) - lookups, (pruned, report)
    # A lookup that reads every bucket says why.
    assert all(f.sides[0].reasons for f in findings if f.kind == "lookup" and f.buckets_read == f.buckets), report


@pytest.fixture(scope="module")
def corpus(dbt_project):
    """Read and planned through the checker's default connection: the
    project's own dbt target (method session here)."""
    return build_corpus(dbt_project, lambda: DbtTargetClient(dbt_project.root, dbt_project.root))


@pytest.mark.parametrize("label, conf, sql", CORPUS, ids=[c[0] for c in CORPUS])
def test_static_verdict_equals_the_physical_plan(spark, corpus, label, conf, sql):
    client, catalog = corpus
    if conf.get("spark.sql.ansi.enabled") == "true":
        # dbt-spark sets ANSI off again before each statement of a session
        # target: such a model never runs with ANSI on. Ask the session directly.
        client = SparkClient(spark)
    check_query(client, catalog, conf, sql)


def test_the_frozen_catalog_and_verdicts_are_what_spark_gives(corpus):
    """tests/fixtures/checker_corpus.json holds the corpus's catalog, the
    session's settings and every query's findings, as read and judged here
    (and, by test_static_verdict_equals_the_physical_plan, as Spark plans
    them), so that test_checker_frozen.py judges them with no JVM. SB_FREEZE=1
    writes it anew."""
    client, catalog = corpus
    session = session_values(client, SESSION_KEYS)
    findings = {
        label: [f.to_json() for f in analyze_sql(sql.format(S=S), catalog, check_settings(conf, session))]
        for label, conf, sql in CORPUS
    }
    frozen = json.loads(json.dumps({"catalog": catalog_to_json(catalog), "session": session, "findings": findings}))
    if os.environ.get("SB_FREEZE"):
        FROZEN.parent.mkdir(exist_ok=True)
        FROZEN.write_text(json.dumps(frozen, indent=1, sort_keys=True) + "\n")
    stored = json.loads(FROZEN.read_text())
    if stored["session"][SPARK_VERSION] != session[SPARK_VERSION]:
        # Frozen on the pinned Spark; another (a cell of the version matrix, noxfile.py) has settings and
        # verdicts of its own, which the tests above check against its plans. The tables read the same.
        assert stored["catalog"] == frozen["catalog"]
        return
    assert stored == frozen, "run with SB_FREEZE=1 to write it anew"


def test_verify_plans_under_the_models_settings_and_skips_broadcasts(corpus):
    """`--verify` plans under the settings the model runs with (`--conf`), put
    back after; a join the plan broadcasts has no verdict to compare."""
    client, catalog = corpus
    superset = f"select * from {S}.a8 x join {S}.b8 y on x.k = y.k and x.g = y.g"
    relaxed = {"spark.sql.requireAllClusterKeysForCoPartition": "false"}
    before = client.query("SET spark.sql.requireAllClusterKeysForCoPartition")[0][1]
    for conf, shuffled in (({}, [True, True]), (relaxed, [False, False])):
        findings = analyze_sql(superset, catalog, EngineSettings("spark", conf))
        (result,) = verify(client, superset, findings, conf)
        assert result["matched"] and result["plan"] == shuffled, (conf, result)
        assert client.query("SET spark.sql.requireAllClusterKeysForCoPartition")[0][1] == before
    # Planned without the relaxed setting, the checker's "no shuffle" disagrees with the plan.
    findings = analyze_sql(superset, catalog, EngineSettings("spark", relaxed))
    (result,) = verify(client, superset, findings)
    assert result["matched"] is False

    # The plain side would be shuffled; broadcast by its size under the model's threshold (which the
    # checker does not model), it is not: no verdict to compare.
    plain = f"select * from {S}.a8 x join {S}.p y on x.k = y.k"
    findings = analyze_sql(plain, catalog, EngineSettings("spark", {}))
    assert [s.shuffle for s in findings[0].sides] == [False, True]
    (result,) = verify(client, plain, findings, {"spark.sql.autoBroadcastJoinThreshold": "10MB"})
    assert result == {"matched": None, "plan": "broadcast join"}
    # Broadcast by the query's hint, which the checker follows: no side shuffled, as the plan says.
    hinted = f"select /*+ BROADCAST(y) */ * from {S}.a8 x join {S}.p y on x.k = y.k"
    (finding,) = analyze_sql(hinted, catalog, EngineSettings("spark", {}))
    assert [s.shuffle for s in finding.sides] == [
        False,
        False,
    ] and "broadcast by the query's hint" in finding.suggestions[0]
    (result,) = verify(client, hinted, [finding])
    assert result["matched"] is True and result["plan"] == [False, False]


def test_verify_pairs_each_lookup_with_its_own_scan(corpus):
    """Two scans of one table, the first lookup uncounted (unknown), the
    second counted: the counted one is paired with the scan that agrees with
    it, the unknown one with the other (taken in order, the unknown took the
    agreeing scan and the counted one was reported wrong: randomized seed
    750861906)."""
    client, catalog = corpus
    sql = (
        f"select a.k, b.k as bk from (select distinct k, w from {S}.kb8) a right join {S}.p b on a.k = b.k"
        f" join (select cast(k as int) as k, w from {S}.kb8) c on c.k = b.k where a.k in (7, 3000000000, null)"
    )
    findings = analyze_sql(sql, catalog, EngineSettings("spark", {}))
    lookups = [f for f in findings if f.kind == "lookup"]
    assert [f.buckets_read for f in lookups] == [None, 3], [f.to_json() for f in lookups]
    results = [r for f, r in zip(findings, verify(client, sql, findings), strict=True) if f.kind == "lookup"]
    assert results == [
        {"matched": None, "plan": {"buckets_read": 8, "buckets": 8}},
        {"matched": True, "plan": {"buckets_read": 3, "buckets": 8}},
    ]


def test_every_setting_the_checker_suggests_removes_its_shuffle(corpus):
    """Advice that works when followed (issue 83): for every finding of the corpus that shuffles for one
    reason and is offered a setting, Spark plans the query again with it, and that finding's shuffle is gone
    (a side fewer shuffled). Where a finding has several obstacles (joined on more than the bucket columns
    of tables whose counts differ), the suggestions name each, and all the settings together remove it."""
    client, catalog = corpus
    tried: Counter = Counter()
    for label, conf, sql in CORPUS:
        counts, failed = try_suggested_settings(client, catalog, sql.format(S=S), conf)
        assert not failed, (label, failed)
        tried += counts
    assert tried, "the corpus offers settings"
    print(f"suggested settings tried, per reason code: {dict(sorted(tried.items()))}")


def test_every_materialization_the_checker_suggests_removes_its_shuffle(corpus):
    """`materialize X with bucketed_table, clustered_by=[...], ...` followed on the corpus: X declared with the
    suggested spec (as --catalog local declares it), the query planned again, and that shuffle is gone."""
    client, catalog = corpus
    tried = 0
    for label, conf, sql in CORPUS:
        n, failed = try_suggested_specs(client, catalog, sql.format(S=S), conf, "sugg_corpus")
        assert not failed, (label, failed)
        tried += n
    print(f"materializations tried: {tried}")
    assert tried >= 5


def test_several_obstacles_are_named_at_once(corpus):
    """Tables of 8 and 16 buckets joined on their bucket column and another: the keys first (Spark requires
    all cluster keys), and the counts behind them, at once."""
    _, catalog = corpus
    sql = f"select * from {S}.a8 x join {S}.c16 y on x.k = y.k and x.v = y.w"
    (f,) = [f for f in analyze_sql(sql, catalog, check_settings({}, {})) if f.kind == "join"]
    shuffled = [s for s in f.sides if s.shuffle]
    assert any(E.KEYS_SUPERSET in s.reasons and E.BUCKET_COUNT_MISMATCH in s.reasons for s in shuffled), f.to_json()
    assert any("requireAllClusterKeysForCoPartition=false" in t for t in f.suggestions)
    assert any(t.startswith("give both tables the same bucket count") for t in f.suggestions)
