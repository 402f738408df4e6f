"""The checker's static verdicts against Spark's physical plans: for every
query of the corpus, and every join side and aggregation in it, the static
answer (shuffle or not) equals the plan's (an Exchange under it or not)."""

from __future__ import annotations

from collections import Counter

import pytest

from harness.dbt_project import DbtProject
from spark_bucketing.checker import Catalog, EngineSettings, analyze_sql
from spark_bucketing.checker.engines import SESSION_KEYS
from spark_bucketing.checker.relations import relation_from_live
from spark_bucketing.checker.verify import explain, scans, session_conf, session_values, verify
from spark_bucketing.connection import DbtTargetClient
from spark_bucketing.metadata import SparkClient
from tests.support.incremental import run_model

S = "t_checker_corpus"
AUTO_BUCKETED_SCAN = "spark.sql.sources.bucketing.autoBucketedScan.enabled"
TABLES = {
    # name: (columns, bucketing clause or None, storage)
    "a8": ("k int, v string, k2 bigint, g int", "clustered by (k) into 8 buckets", "using parquet"),
    "b8": ("k int, w string, g int", "clustered by (k) into 8 buckets", "using parquet"),
    "c16": ("k int, w string", "clustered by (k) into 16 buckets", "using parquet"),
    "d4": ("k int, w string", "clustered by (k) into 4 buckets", "using parquet"),
    "e2": ("k int, w string", "clustered by (k) into 2 buckets", "using parquet"),
    "kb8": ("k bigint, w string", "clustered by (k) into 8 buckets", "using parquet"),
    "m8": ("k int, g int, w string", "clustered by (k, g) into 8 buckets", "using parquet"),
    "n8": ("k int, g int, w string", "clustered by (k, g) into 8 buckets", "using parquet"),
    "h8": ("k int, w string", "clustered by (k) into 8 buckets", "stored as parquet"),
    "h8b": ("k int, w string", "clustered by (k) into 8 buckets", "stored as parquet"),
    "p": ("k int, w string, g int", None, "using parquet"),
    "s8": ("s string, k int", "clustered by (s) into 8 buckets", "using parquet"),
}

COALESCE = {"spark.sql.bucketing.coalesceBucketsInJoin.enabled": "true"}
NO_REQUIRE_ALL = {"spark.sql.requireAllClusterKeysForCoPartition": "false"}
NO_BUCKETING = {"spark.sql.sources.bucketing.enabled": "false"}
ORDERED = {"spark.sql.legacy.bucketedTableScan.outputOrdering": "true"}
DAY0 = "'2024-01-01'"

CORPUS = [
    # counts equal / different, coalescing on and off
    ("equal counts", {}, "select * from {S}.a8 a join {S}.b8 b on a.k = b.k"),
    ("8 vs 16", {}, "select * from {S}.a8 a join {S}.c16 c on a.k = c.k"),
    ("16 vs 8", {}, "select * from {S}.c16 c join {S}.a8 a on c.k = a.k"),
    ("8 vs 4", {}, "select * from {S}.a8 a join {S}.d4 d on a.k = d.k"),
    ("8 vs 16 coalesced", COALESCE, "select * from {S}.a8 a join {S}.c16 c on a.k = c.k"),
    ("8 vs 4 coalesced", COALESCE, "select * from {S}.a8 a join {S}.d4 d on a.k = d.k"),
    ("2 vs 16 ratio too big", COALESCE, "select * from {S}.e2 e join {S}.c16 c on e.k = c.k"),
    # Coalescing shrinks two scans, never a join's output: b8 keeps its 8, the 4 of a8 and d4 are shuffled to it.
    (
        "coalesced join joined again",
        COALESCE,
        "select * from {S}.a8 a join {S}.d4 d on a.k = d.k join {S}.b8 b on a.k = b.k",
    ),
    (
        "aggregate vs coalescable scan",
        COALESCE,
        "select * from (select k, count(*) n from {S}.a8 group by k) a join {S}.d4 d on a.k = d.k",
    ),
    # keys equal / superset / subset / reordered
    ("ON order reversed", {}, "select * from {S}.a8 a join {S}.b8 b on b.k = a.k"),
    ("superset of bucket keys", {}, "select * from {S}.a8 a join {S}.b8 b on a.k = b.k and a.g = b.g"),
    ("superset, require-all off", NO_REQUIRE_ALL, "select * from {S}.a8 a join {S}.b8 b on a.k = b.k and a.g = b.g"),
    ("subset of two bucket keys", {}, "select * from {S}.m8 m join {S}.n8 n on m.k = n.k"),
    ("two keys", {}, "select * from {S}.m8 m join {S}.n8 n on m.k = n.k and m.g = n.g"),
    ("two keys reordered", {}, "select * from {S}.m8 m join {S}.n8 n on m.g = n.g and m.k = n.k"),
    ("two keys crossed", {}, "select * from {S}.m8 m join {S}.n8 n on m.k = n.g and m.g = n.k"),
    ("non-bucket key", {}, "select * from {S}.a8 a join {S}.b8 b on a.g = b.g"),
    # types
    ("int vs bigint", {}, "select * from {S}.a8 a join {S}.kb8 x on a.k = x.k"),
    ("bigint vs int", {}, "select * from {S}.kb8 x join {S}.a8 a on x.k = a.k"),
    # casts and arithmetic on keys, in CTEs and inline
    (
        "cast in CTE",
        {},
        "with c as (select cast(k as bigint) as k, v from {S}.a8) select * from c join {S}.kb8 x on c.k = x.k",
    ),
    ("cast inline", {}, "select * from {S}.a8 a join {S}.b8 b on cast(a.k as bigint) = cast(b.k as bigint)"),
    ("cast on one key", {}, "select * from {S}.a8 a join {S}.kb8 x on cast(a.k as bigint) = x.k"),
    ("cast on one key, other side narrower", {}, "select * from {S}.a8 a join {S}.b8 b on a.k = cast(b.k as bigint)"),
    ("cast to string on one key", {}, "select * from {S}.a8 a join {S}.b8 b on a.k = cast(b.k as string)"),
    (
        "cast to string on one key, ANSI",
        {"spark.sql.ansi.enabled": "true"},
        "select * from {S}.a8 a join {S}.b8 b on a.k = cast(b.k as string)",
    ),
    (
        "string key vs bigint key, ANSI",
        {"spark.sql.ansi.enabled": "true"},
        "select * from {S}.kb8 x join {S}.a8 a on x.k = cast(a.k as string)",
    ),
    ("arithmetic in CTE", {}, "with c as (select k + 1 as k from {S}.a8) select * from c join {S}.b8 b on c.k = b.k"),
    ("arithmetic inline", {}, "select * from {S}.a8 a join {S}.b8 b on a.k + 1 = b.k"),
    (
        "renamed in CTE",
        {},
        "with c as (select k as user_key, v from {S}.a8 where v is not null) "
        "select * from c join {S}.b8 b on c.user_key = b.k",
    ),
    (
        "nested CTEs",
        {},
        "with c1 as (select k, v from {S}.a8), c2 as (select k as kk from c1) "
        "select * from c2 join {S}.b8 b on c2.kk = b.k",
    ),
    # UNION
    ("union", {}, "select * from (select k from {S}.a8 union all select k from {S}.b8) u join {S}.c16 c on u.k = c.k"),
    (
        "union both sides",
        {},
        "with u as (select k from {S}.a8 union all select k from {S}.b8) "
        "select * from u join (select k from {S}.a8 union select k from {S}.b8) v on u.k = v.k",
    ),
    # aggregates before joins
    (
        "aggregate on bucket key",
        {},
        "with t as (select k, count(*) as n from {S}.a8 group by k) select * from t join {S}.b8 b on t.k = b.k",
    ),
    (
        "aggregate on other column",
        {},
        "with t as (select g as k, count(*) as n from {S}.a8 group by g) select * from t join {S}.b8 b on t.k = b.k",
    ),
    (
        "two aggregates joined",
        {},
        "with t as (select g, count(*) n from {S}.a8 group by g), "
        "u as (select g, count(*) m from {S}.b8 group by g) select * from t join u on t.g = u.g",
    ),
    # outer joins
    ("left join", {}, "select * from {S}.a8 a left join {S}.b8 b on a.k = b.k"),
    ("right join 8 vs 16", {}, "select * from {S}.a8 a right join {S}.c16 c on a.k = c.k"),
    ("full join", {}, "select * from {S}.a8 a full outer join {S}.b8 b on a.k = b.k"),
    ("left join plain", {}, "select * from {S}.a8 a left join {S}.p on a.k = p.k"),
    # three-way joins
    ("three-way bucketed", {}, "select * from {S}.a8 a join {S}.b8 b on a.k = b.k join {S}.m8 m on b.k = m.k"),
    ("three-way then 16", {}, "select * from {S}.a8 a join {S}.b8 b on a.k = b.k join {S}.c16 c on a.k = c.k"),
    ("three-way with plain", {}, "select * from {S}.a8 a join {S}.p on a.k = p.k join {S}.b8 b on p.k = b.k"),
    # subqueries with aliases, USING
    ("subquery alias", {}, "select * from (select k as id, w from {S}.b8) s join {S}.a8 a on s.id = a.k"),
    ("using", {}, "select * from {S}.a8 join {S}.b8 using (k)"),
    ("using superset", {}, "select * from {S}.a8 join {S}.b8 using (k, g)"),
    ("filtered subquery", {}, "select * from (select * from {S}.a8 where g > 3) a join {S}.b8 b on a.k = b.k"),
    # semi and anti joins: IN / EXISTS subqueries, LEFT SEMI / ANTI JOIN
    ("in subquery", {}, "select * from {S}.a8 a where a.k in (select k from {S}.b8)"),
    ("in subquery 8 vs 16", {}, "select * from {S}.a8 a where a.k in (select k from {S}.c16)"),
    ("in subquery on other column", {}, "select * from {S}.a8 a where a.g in (select g from {S}.b8)"),
    ("in subquery of plain table", {}, "select * from {S}.a8 a where a.k in (select k from {S}.p)"),
    (
        "in subquery with filter",
        {},
        "select * from {S}.a8 a where a.v is not null and a.k in (select k from {S}.b8 where w > 'a')",
    ),
    ("not in subquery", {}, "select * from {S}.a8 a where a.k not in (select k from {S}.b8)"),
    ("exists correlated", {}, "select * from {S}.a8 a where exists (select 1 from {S}.b8 b where b.k = a.k)"),
    ("exists 8 vs 4", {}, "select * from {S}.a8 a where exists (select 1 from {S}.d4 d where d.k = a.k)"),
    ("not exists correlated", {}, "select * from {S}.a8 a where not exists (select 1 from {S}.b8 b where b.k = a.k)"),
    (
        "not exists on other column",
        {},
        "select * from {S}.a8 a where not exists (select 1 from {S}.b8 b where b.g = a.g)",
    ),
    ("left semi join", {}, "select * from {S}.a8 a left semi join {S}.b8 b on a.k = b.k"),
    ("left anti join 8 vs 16", {}, "select * from {S}.a8 a left anti join {S}.c16 c on a.k = c.k"),
    (
        "semi join then join",
        {},
        "select * from {S}.a8 a left semi join {S}.b8 b on a.k = b.k join {S}.m8 m on a.k = m.k",
    ),
    # plain side, both plain
    ("bucketed vs plain", {}, "select * from {S}.a8 a join {S}.p on a.k = p.k"),
    ("plain vs plain", {}, "select * from {S}.p p1 join {S}.p p2 on p1.k = p2.k"),
    # GROUP BY / DISTINCT / window
    ("group by bucket key", {}, "select k, count(*) from {S}.a8 group by k"),
    ("group by superset", {}, "select k, g, count(*) from {S}.a8 group by k, g"),
    ("group by other", {}, "select g, count(*) from {S}.a8 group by g"),
    ("group by hive table", {}, "select k, count(*) from {S}.h8 group by k"),
    ("distinct bucket key", {}, "select distinct k from {S}.a8"),
    ("distinct other", {}, "select distinct g from {S}.a8"),
    ("window on bucket key", {}, "select k, row_number() over (partition by k order by v) from {S}.a8"),
    ("window on other", {}, "select k, row_number() over (partition by g order by v) from {S}.a8"),
    ("group by after join", {}, "select a.k, count(*) from {S}.a8 a join {S}.b8 b on a.k = b.k group by a.k"),
    # Hive-hash vs Spark-hash tables
    ("hive vs spark", {}, "select * from {S}.h8 h join {S}.a8 a on h.k = a.k"),
    ("hive vs hive", {}, "select * from {S}.h8 h join {S}.h8b g on h.k = g.k"),
    # session settings
    ("bucketing disabled", NO_BUCKETING, "select * from {S}.a8 a join {S}.b8 b on a.k = b.k"),
    # evolving table (mixed partition specs), with and without partition filters
    ("evolving, all partitions", {}, "select * from {S}.ev e join {S}.b8 b on e.k = b.k"),
    ("evolving, one old partition", {}, "select * from {S}.ev e join {S}.b8 b on e.k = b.k where e.day = '2024-01-01'"),
    (
        "evolving, range",
        {},
        "select * from {S}.ev e join {S}.b8 b on e.k = b.k where e.day between '2024-01-01' and '2024-01-02'",
    ),
    ("evolving, in list", {}, "select * from {S}.ev e join {S}.b8 b on e.k = b.k where e.day in ('2024-01-03')"),
    ("evolving, group by", {}, "select k, count(*) from {S}.ev where day >= '2024-01-02' group by k"),
    # lookups: how many buckets a filter reads (bucket pruning)
    ("lookup =", {}, "select * from {S}.a8 where k = 5"),
    ("lookup = reversed", {}, "select * from {S}.a8 where 7 = k"),
    ("lookup IN", {}, "select * from {S}.a8 where k in (1, 2, 3)"),
    ("lookup IN, 13 values (InSet)", {}, "select * from {S}.a8 where k in (1,2,3,4,5,6,7,8,9,10,11,12,13)"),
    ("lookup IS NULL", {}, "select * from {S}.a8 where k is null"),
    ("lookup <=> NULL", {}, "select * from {S}.a8 where k <=> null"),
    ("lookup OR", {}, "select * from {S}.a8 where k = 5 or k = 11"),
    ("lookup OR with IS NULL", {}, "select * from {S}.a8 where k = 5 or k is null"),
    ("lookup AND", {}, "select * from {S}.a8 where k in (1, 2, 3) and k in (3, 4)"),
    ("lookup AND other column", {}, "select * from {S}.a8 where k = 5 and v = 'x'"),
    ("lookup OR other column", {}, "select * from {S}.a8 where k = 5 or v = 'x'"),
    ("lookup range", {}, "select * from {S}.a8 where k between 1 and 3"),
    ("lookup negation", {}, "select * from {S}.a8 where not (k = 5)"),
    ("lookup expression", {}, "select * from {S}.a8 where k + 1 = 5"),
    ("lookup cast to string", {}, "select * from {S}.a8 where cast(k as string) = '5'"),
    ("lookup cast to bigint", {}, "select * from {S}.a8 where cast(k as bigint) = 5"),
    ("lookup string literal on int", {}, "select * from {S}.a8 where k = '5'"),
    ("lookup mixed IN list", {}, "select * from {S}.a8 where k in (1, '2')"),
    ("lookup number on string column", {}, "select * from {S}.s8 where s = 5"),
    ("lookup string column", {}, "select * from {S}.s8 where s in ('a', 'b')"),
    ("lookup negative", {}, "select * from {S}.a8 where k = -3"),
    ("lookup bigint column", {}, "select * from {S}.kb8 where k = 12"),
    ("lookup two bucket columns", {}, "select * from {S}.m8 where k = 1 and g = 2"),
    ("lookup hive table", {}, "select * from {S}.h8 where k = 1"),
    ("lookup through CTE", {}, "with c as (select k as kk, v from {S}.a8) select * from c where kk = 3"),
    (
        "lookup through two CTEs",
        {},
        "with c as (select * from {S}.a8), d as (select k, v from c) select * from d where k = 9",
    ),
    (
        "lookup inferred through join",
        {},
        "select * from {S}.a8 a join {S}.b8 b on a.k = b.k where a.k in (1, 2, 3)",
    ),
    ("lookup in left join ON", {}, "select * from {S}.a8 a left join {S}.b8 b on a.k = b.k and b.k = 3"),
    ("lookup on preserved side", {}, "select * from {S}.a8 a left join {S}.b8 b on a.k = b.k where a.k = 3"),
    ("lookup on evolving table", {}, "select * from {S}.ev where k = 3"),
    ("lookup with join on other side", {}, "select * from {S}.a8 a join {S}.p on a.k = p.k where p.g = 2"),
    # sort-merge joins that skip their Sort: one file per bucket, sorted_by the keys, one partition read
    (
        "sorted self-join, one partition, ordering on",
        ORDERED,
        f"select * from {{S}}.sk a join {{S}}.sk b on a.id = b.id where a.day = {DAY0} and b.day = {DAY0}",
    ),
    (
        "sorted self-join, one partition, ordering off",
        {},
        f"select * from {{S}}.sk a join {{S}}.sk b on a.id = b.id where a.day = {DAY0} and b.day = {DAY0}",
    ),
    (
        "sorted self-join, two partitions",
        ORDERED,
        f"select * from {{S}}.sk a join {{S}}.sk b on a.id = b.id where a.day = {DAY0}",
    ),
    (
        "sorted join through CTE",
        ORDERED,
        f"with x as (select id, k from {{S}}.sk where day = {DAY0}) "
        f"select * from x join {{S}}.sk b on x.id = b.id where b.day = {DAY0}",
    ),
    (
        "sorted table joined on another column",
        ORDERED,
        f"select * from {{S}}.sk a join {{S}}.a8 b on a.id = b.k where a.day = {DAY0}",
    ),
]


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
    settings = EngineSettings("spark", conf).under(session_values(client, SESSION_KEYS))
    findings = analyze_sql(sql, catalog, settings)
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


@pytest.fixture(scope="module")
def corpus_catalog(corpus):
    return corpus[1]


def _settings(conf):
    # ANSI off, as dbt-spark sets it on every connection (and so on this shared session).
    return EngineSettings("spark", {"spark.sql.shuffle.partitions": "4", "spark.sql.ansi.enabled": "false", **conf})


def test_corpus_covers_every_rule():
    assert len(CORPUS) >= 90
    assert len({label for label, _, _ in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("label, conf, sql", CORPUS, ids=[c[0] for c in CORPUS])
def test_static_verdict_equals_the_physical_plan(spark, corpus, label, conf, sql):
    client, catalog = corpus
    if conf.get("spark.sql.ansi.enabled") == "true":
        # dbt-spark sets ANSI off again before each statement of a session
        # target: such a model never runs with ANSI on. Ask the session directly.
        client = SparkClient(spark)
    check_query(client, catalog, conf, sql)


@pytest.mark.parametrize(
    "label, sorts",
    [
        ("sorted self-join, one partition, ordering on", ["skipped", "skipped"]),
        ("sorted self-join, one partition, ordering off", ["skippable", "skippable"]),
        ("sorted self-join, two partitions", ["skipped", "needed"]),
        ("sorted join through CTE", ["skipped", "skipped"]),
        # a8's int key is cast to sk's bigint: that side is shuffled, so sorted.
        ("sorted table joined on another column", ["skipped", "needed"]),
        ("equal counts", [None, None]),
    ],
)
def test_sort_merge_join_sorts(corpus_catalog, label, sorts):
    """Which join sides need their Sort (the plans agree: the corpus test)."""
    (conf, sql) = [(c, q) for name, c, q in CORPUS if name == label][0]
    (join,) = [f for f in analyze_sql(sql.format(S=S), corpus_catalog, _settings(conf)) if f.kind == "join"]
    assert [s.sort for s in join.sides] == sorts
    if "skippable" in sorts:
        assert any("outputOrdering" in text for text in join.suggestions)


@pytest.mark.parametrize(
    "label, read, reason",
    [
        ("lookup =", 1, None),
        ("lookup = reversed", 8, "LITERAL_BEFORE_COLUMN"),
        ("lookup IN, 13 values (InSet)", 6, None),
        ("lookup OR other column", 8, "OR_WITH_OTHER_COLUMNS"),
        ("lookup range", 8, "PREDICATE_NOT_PRUNABLE"),
        ("lookup cast to string", 8, "KEY_CAST"),
        ("lookup cast to bigint", 1, None),
        ("lookup mixed IN list", 8, "LITERAL_TYPE_CASTS_COLUMN"),
        ("lookup number on string column", 8, "LITERAL_TYPE_CASTS_COLUMN"),
        ("lookup two bucket columns", 8, "PRUNING_NEEDS_ONE_BUCKET_COLUMN"),
        ("lookup hive table", 8, "HIVE_HASH_NOT_USED_BY_SPARK"),
        ("lookup through two CTEs", 1, None),
        ("lookup on evolving table", 16, "EVOLVING_TABLE_DECLARED_UNBUCKETED"),
    ],
)
def test_lookup_findings(corpus_catalog, label, read, reason):
    (sql,) = [q for name, _, q in CORPUS if name == label]
    lookups = [f for f in analyze_sql(sql.format(S=S), corpus_catalog, _settings({})) if f.kind == "lookup"]
    assert [f.buckets_read for f in lookups] == [read]
    assert lookups[0].sides[0].reasons == ([reason] if reason else [])
    assert bool(lookups[0].suggestions) == bool(reason)


@pytest.mark.parametrize(
    "label, reason",
    [
        ("evolving, all partitions", "MIXED_PARTITION_SPECS"),
        ("evolving, one old partition", "EVOLVING_TABLE_DECLARED_UNBUCKETED"),
        ("evolving, range", "EVOLVING_TABLE_DECLARED_UNBUCKETED"),
        ("evolving, in list", "EVOLVING_TABLE_DECLARED_UNBUCKETED"),
        ("evolving, group by", "MIXED_PARTITION_SPECS"),
    ],
)
def test_partition_predicates_decide_which_specs_a_query_reads(corpus_catalog, label, reason):
    """Days 0-1 were written with 8 buckets, day 2 with 16: a query that reads
    only one of the two specs is told the table still declares itself unbucketed."""
    (sql,) = [q for name, _, q in CORPUS if name == label]
    findings = analyze_sql(sql.format(S=S), corpus_catalog, _settings({}))
    ev_sides = [s for f in findings for s in f.sides if s.relation == f"{S}.ev"]
    assert ev_sides and all(s.shuffle and reason in s.reasons for s in ev_sides)
    assert any("backfill" in text for f in findings for text in f.suggestions)


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

    # The plain side would be shuffled; broadcast by the hint, it is not.
    hinted = f"select /*+ BROADCAST(y) */ * from {S}.a8 x join {S}.p y on x.k = y.k"
    findings = analyze_sql(hinted, catalog, EngineSettings("spark", {}))
    (result,) = verify(client, hinted, findings)
    assert result == {"matched": None, "plan": "broadcast join"}
