"""The checker's corpus: the tables it runs on (S.<name>) and, per query,
the settings it is planned under. tests/test_checker_corpus.py checks every
verdict against Spark's plans; tests/test_checker_frozen.py checks the same
verdicts from the frozen catalog (tests/fixtures/checker_corpus.json), with
no JVM."""

from __future__ import annotations

from pathlib import Path

from spark_bucketing.checker import EngineSettings

FROZEN = Path(__file__).resolve().parents[1] / "fixtures" / "checker_corpus.json"

S = "t_checker_corpus"
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
    # Kept from Spark 4.1 (spark.sql.unionOutputPartitioning), shuffled before: the model follows the version.
    (
        "union of one placement, grouped",
        {},
        "select k, count(*) from (select k from {S}.a8 union all select k from {S}.b8) u group by k",
    ),
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
    # outer joins Spark narrows: a later inner join's equality or a WHERE filter rejects the padded rows
    (
        "full join narrowed to right by the next join",
        {},
        "select * from {S}.p full join {S}.a8 a on p.k = a.k join {S}.b8 b on a.k = b.k",
    ),
    (
        "full join narrowed, bucketed side kept",
        {},
        "select * from {S}.a8 a full join {S}.p on a.k = p.k join {S}.b8 b on b.k = a.k where a.g > 1",
    ),
    (
        "left join narrowed by a filter",
        {},
        "select * from {S}.p left join {S}.a8 a on p.k = a.k join {S}.b8 b on a.k = b.k where a.v <> 'x'",
    ),
    # ... where the side kept is a subquery's, or a literal filters its key (once unknown; randomized seeds)
    (
        "full join of subqueries narrowed by the next join",
        {},
        "select a.k, b.k as bk from (select k, max(w) as w from {S}.h8 group by k) a"
        " full join (select cast(k as int) as k, w from {S}.d4) b on a.k = b.k"
        " join (select k, w from {S}.c16 where k is not null) c on c.k = b.k",
    ),
    (
        "full join narrowed, a literal on its key",
        {},
        "select a.k, b.k as bk from {S}.e2 a full join {S}.h8b b on a.k = b.k join {S}.c16 c on c.k = a.k"
        " where a.k = 33",
    ),
    # a DISTINCT under an alias, copied into each branch of the union its IN filters (seed 172468077)
    (
        "IN of an aliased DISTINCT, moved into a union's branches",
        {},
        "select * from (select k, w from {S}.h8 union all select k, w from {S}.c16) a"
        " where a.k in (select k from (select distinct k, g as w from {S}.a8) x)",
    ),
    # a side Spark may read coalesced, then a DISTINCT of the smaller count (the extension's case, from seed
    # 987473017, is among test_checker_randomized.py's FOUND: this corpus runs without the extension)
    (
        "coalesced side of an outer join, then a DISTINCT of the smaller count",
        COALESCE,
        "select c.k from {S}.c16 c left join {S}.d4 d on c.k = d.k"
        " join (select distinct k, w from {S}.d4) x on x.k = c.k",
    ),
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


def settings(conf: dict) -> EngineSettings:
    # ANSI off, as dbt-spark sets it on every connection (and so on this shared session).
    return EngineSettings("spark", {"spark.sql.shuffle.partitions": "4", "spark.sql.ansi.enabled": "false", **conf})


def check_settings(conf: dict, session: dict[str, str]) -> EngineSettings:
    """The settings `check` models a query with: `conf`, ANSI off, and what
    they leave unsaid as the connected session says (`session`)."""
    return EngineSettings("spark", {"spark.sql.ansi.enabled": "false", **conf}).under(session)
