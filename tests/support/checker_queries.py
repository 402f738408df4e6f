"""Generated queries for the checker's randomized comparison with Spark's
plans (tests/test_checker_randomized.py, benchmarks/checker_randomized.py):
a seeded generator of the shapes people write (joins of two and three
relations through subqueries and CTEs, renamed, cast and computed keys,
aggregates, DISTINCT, windows, UNION ALL, outer joins, IN / EXISTS / NOT
EXISTS, point lookups, broadcast hints) over Spark-hash tables of several
counts and key types, Hive-format and plain tables; with `models=`, also the
models of a dbt project over daily-partitioned tables (the package's
Hive-hash v1 and v2 and Spark-hash tables, stock Spark's, plain ones):
staging CTEs and marts in the jaffle_shop manner, incremental models'
filters (`day > (select max(day) ...)`), joins and aggregates on the
bucket key and the day, `using` joins, lookups of a key on a day. And the
judge that compares each static finding with the plan as `--catalog live`
does."""

from __future__ import annotations

import copy
import random

from spark_bucketing.checker import Catalog, analyze_sql
from spark_bucketing.checker.engines import SESSION_KEYS
from spark_bucketing.checker.plan_verdicts import adopt_plan
from spark_bucketing.checker.relations import relation_from_live
from spark_bucketing.checker.verify import plan_answers, session_values
from spark_bucketing.metadata import SparkClient
from tests.support.checker_corpus import TABLES, check_settings

S = "rnd"
KEYED = ["a8", "b8", "c16", "d4", "e2", "kb8", "h8", "h8b", "p"]  # tables with a column k
LITERALS = ["0", "1", "7", "33", "-5", "3000000000", "null"]
# FROM items with the columns k and w over a table `t` (its other column `o`).
SHAPES = {
    "table": "{t}",
    "sub": "(select k, {o} as w from {t} where k is not null)",
    "rename": "(select kk as k, w from (select k as kk, {o} as w from {t}) {alias})",
    "cast": "(select cast(k as {type}) as k, {o} as w from {t})",
    "expr": "(select k + 1 as k, {o} as w from {t})",
    "agg": "(select k, max({o}) as w from {t} group by k)",
    "window": "(select k, {o} as w, count(*) over (partition by {part}) as n from {t})",
    "distinct": "(select distinct k, {o} as w from {t})",
    "union": "(select k, {o} as w from {t} union all select k, {o2} as w from {t2})",
}


class Gen:
    def __init__(self, rng: random.Random, daily: list[str] | None = None):
        """`daily`: the daily-partitioned tables (columns k, w, day) models are drawn over; none, no models."""
        self.rng = rng
        self.daily = daily or []
        self.tags: set[str] = set()
        self.n = 0

    def alias(self) -> str:
        self.n += 1
        return f"t{self.n}"

    def relation(self, depth: int = 0) -> str:
        """A FROM item with a column `k` (and `w`): a table, or a derived shape over one."""
        rng, table = self.rng, f"{S}.{self.rng.choice(KEYED)}"
        other = "v" if table.endswith(".a8") else "w"
        shape = rng.choice(["table"] * 5 + ["sub", "rename", "cast", "expr", "agg", "window", "distinct", "union"])
        if depth > 0 and shape in ("agg", "window", "union"):
            shape = "sub"
        self.tags.add(shape)
        second = f"{S}.{rng.choice(KEYED)}"
        return SHAPES[shape].format(
            t=table,
            o=other,
            alias=self.alias(),
            type=rng.choice(["int", "bigint", "string"]),
            part=rng.choice(["k", "k", other]),
            t2=second,
            o2="v" if second.endswith(".a8") else "w",
        )

    def lookup(self, col: str) -> str:
        rng = self.rng
        self.tags.add("lookup")
        if rng.random() < 0.5:
            return f"{col} = {rng.choice(LITERALS[:-1])}"
        return f"{col} in ({', '.join(rng.sample(LITERALS, rng.randint(2, 3)))})"

    def query(self) -> str:
        rng = self.rng
        if self.daily and rng.random() < 0.5:
            return self.model()
        kind = rng.choice(["join", "join", "join3", "semi", "agg", "distinct", "window", "lookup"])
        self.tags.add(kind)
        where = f" where {self.lookup('a.k')}" if kind != "lookup" and rng.random() < 0.25 else ""
        if kind in ("join", "join3"):
            left, right = self.relation(), self.relation()
            how = rng.choice(["join", "join", "left join", "full join", "right join"])
            self.tags.add(how.replace(" ", "_"))
            hint = ""
            if rng.random() < 0.1:
                hint, _ = "/*+ BROADCAST(b) */ ", self.tags.add("broadcast")
            sql = f"select {hint}a.k, b.k as bk from {left} a {how} {right} b on a.k = b.k"
            if kind == "join3":
                sql += f" join {self.relation()} c on c.k = {rng.choice(['a', 'b'])}.k"
            return sql + where
        if kind == "semi":
            op = rng.choice(["in", "exists", "not exists"])
            self.tags.add(op.replace(" ", "_"))
            inner = self.relation(1)
            if op == "in":
                return f"select * from {self.relation()} a where a.k in (select k from {inner} x)"
            return f"select * from {self.relation()} a where {op} (select 1 from {inner} x where x.k = a.k)"
        rel = self.relation()
        if kind == "agg":
            return f"select a.k, count(*) as n from {rel} a{where} group by a.k"
        if kind == "distinct":
            return f"select distinct a.k from {rel} a{where}"
        if kind == "window":
            return f"select a.k, row_number() over (partition by a.k order by a.k) as r from {rel} a{where}"
        return f"select * from {rel} a where {self.lookup('a.k')}"

    def day_filter(self, col: str = "day") -> str:
        rng = self.rng
        return rng.choice(
            [
                f"{col} >= '2024-01-02'",
                f"{col} = '2024-01-03'",
                f"{col} between '2024-01-01' and '2024-01-02'",
                f"{col} > (select max(day) from {rng.choice(self.daily)})",
                f"{col} >= date_sub(current_date(), 3)",
            ]
        )

    def staging(self) -> str:
        """A staging model's select over a daily table: renamed, filtered, deduplicated or cast."""
        rng, t = self.rng, self.rng.choice(self.daily)
        shape = rng.choice(["plain", "plain", "renamed", "filtered", "deduped", "cast", "incremental"])
        self.tags.add(f"stg_{shape}")
        return {
            "plain": f"select k, w, day from {t}",
            "renamed": f"select id as k, w, day from (select k as id, w, day from {t}) src",
            "filtered": f"select k, w, day from {t} where {self.day_filter()} and k is not null",
            "deduped": f"select distinct k, w, day from {t}",
            "cast": f"select cast(k as bigint) as k, w, day from {t}",
            "incremental": f"select k, w, day from {t} where day > (select coalesce(max(day), '1900-01-01') from {t})",
        }[shape]

    def model(self) -> str:
        """A dbt model over daily tables: CTEs of staging selects and a mart's joins and aggregates."""
        rng = self.rng
        kind = rng.choice(
            ["mart", "mart", "day_join", "day_agg", "using", "counts", "day_window", "day_lookup"]
            + ["distincts", "day_semi", "day_union"]
        )
        self.tags.add(f"model_{kind}")
        a, b = self.staging(), self.staging()
        if kind == "mart":
            how = rng.choice(["join", "left join", "left join", "full join"])
            self.tags.add(how.replace(" ", "_"))
            keys = rng.choice(["o.k = t.k", "o.k = t.k and o.day = t.day"])
            totals = rng.choice(
                [
                    "select k, count(*) as n, max(w) as last_w from b group by k",
                    "select k, day, count(*) as n, max(w) as last_w from b group by k, day",
                    "select k, count(distinct w) as n, max(day) as last_w from b group by k",
                ]
            )
            if "t.day" in keys and "day," not in totals:
                keys = "o.k = t.k"
            tail = rng.choice(["", " where o.w is not null", f" where o.{self.day_filter()}"])
            return (
                f"with a as ({a}), b as ({b}), orders as (select k, w, day from a), totals as ({totals})"
                f" select o.k, o.day, t.n from orders o {how} totals t on {keys}{tail}"
            )
        if kind == "day_join":
            keys = rng.choice(["x.k = y.k and x.day = y.day", "x.day = y.day and x.k = y.k", "x.k = y.k"])
            where = f"x.{self.day_filter()}"
            return f"with x as ({a}), y as ({b}) select x.k, x.day, y.w from x join y on {keys} where {where}"
        if kind == "day_agg":
            by = rng.choice(["k, day", "day, k", "k"])
            return f"with x as ({a}) select {by}, count(*) as n, sum(length(w)) as l from x group by {by}"
        if kind == "using":
            cols = rng.choice(["k", "k, day"])
            return f"with x as ({a}), y as ({b}) select k, x.w, y.w as w2 from x join y using ({cols})"
        if kind == "counts":
            return f"with x as ({a}) select k, count(distinct day) as days, count(*) as n from x group by k"
        if kind == "distincts":
            return rng.choice(
                [
                    f"with x as ({a}) select k, count(distinct w) as ws, count(distinct day) as days from x group by k",
                    f"with x as ({a}) select count(distinct k) as keys from x",
                    f"with x as ({a}) select day, count(distinct k) as keys from x group by day",
                ]
            )
        if kind == "day_semi":
            op = rng.choice(["exists", "not exists", "in"])
            ctes = f"with x as ({a}), y as ({b})"
            if op == "in":
                return f"{ctes} select * from x where k in (select k from y where {self.day_filter()})"
            return f"{ctes} select * from x where {op} (select 1 from y where y.k = x.k and y.day = x.day)"
        if kind == "day_union":
            by = rng.choice(["k, day", "k"])
            own = rng.choice(["", " where w is not null", " where k > 3"])  # a branch's own filter
            above = rng.choice(["", "", " where k > 3", " where w is not null", " where k in (1, 2)"])
            return (
                f"with x as ({a}), y as ({b}), u as (select k, w, day from x{own} union all select k, w, day from y)"
                f" select {by}, count(*) as n from u{above} group by {by}"
            )
        if kind == "day_window":
            part = rng.choice(["k", "k, day", "day"])
            return f"with x as ({a}) select k, day, row_number() over (partition by {part} order by w) as r from x"
        t = rng.choice(self.daily)
        return f"select * from {t} where {self.lookup('k')} and day = '2024-01-0{rng.randint(1, 3)}'"


def build_tables(client: SparkClient) -> Catalog:
    client.query(f"create database if not exists {S}")
    for name, (cols, bucketing, storage) in TABLES.items():
        client.query(f"drop table if exists {S}.{name}")
        order = f"{storage} {bucketing or ''}" if storage.startswith("using") else f"{bucketing or ''} {storage}"
        client.query(f"create table {S}.{name} ({cols}) {order}")
        select = ", ".join(
            "cast(id as string)" if t.split()[1] == "string" else f"cast(id % 50 as {t.split()[1]})"
            for t in cols.split(", ")
        )
        client.query(f"insert into {S}.{name} select {select} from range(0, 100)")
    catalog = Catalog()
    for name in TABLES:
        catalog.add(relation_from_live(client, f"{S}.{name}"))
    return catalog


# Daily-partitioned tables (k int, w string, day string) stock Spark creates: bucketed on k, and plain.
DAILY_STOCK = {"pd8": "clustered by (k) into 8 buckets", "pd4": "clustered by (k) into 4 buckets", "pp": None}
# Daily-partitioned tables the package builds (bucketed_table, the extension on): each hash family and version.
DAILY_PACKAGE = {
    "hv1": {"bucket_hash": "hive", "buckets": 8},
    "hv2": {"bucket_hash": "hive", "bucketing_version": 2, "buckets": 8},
    "hv4": {"bucket_hash": "hive", "buckets": 4, "sorted_by": ["k"]},
    "sk8": {"bucket_hash": "spark", "buckets": 8, "sorted_by": ["k"]},
}
DAILY_ROWS = (
    "select cast(id % 50 as int) as k, cast(id as string) as w,"
    " concat('2024-01-0', cast(id % 3 + 1 as string)) as day from range(0, 150)"
)


def build_daily(client: SparkClient, catalog: Catalog, dbt_project=None) -> list[str]:
    """The daily tables, added to `catalog`: stock Spark's in S, and, given a
    dbt project (run in this process, the extension on), the package's in
    its schema. Returns their names."""
    names = []
    for name, bucketing in DAILY_STOCK.items():
        client.query(f"drop table if exists {S}.{name}")
        layout = f"using parquet partitioned by (day) {bucketing or ''}"
        client.query(f"create table {S}.{name} (k int, w string, day string) {layout}")
        client.query(f"insert into {S}.{name} {DAILY_ROWS}")
        names.append(f"{S}.{name}")
    if dbt_project is not None:
        for name, config in DAILY_PACKAGE.items():
            config = {"materialized": "bucketed_table", "clustered_by": "k", "partition_by": "day", **config}
            dbt_project.write_model(name, DAILY_ROWS, config)
        dbt_project.run(*DAILY_PACKAGE)
        names += [f"{dbt_project.schema}.{name}" for name in DAILY_PACKAGE]
    for name in names:
        catalog.add(relation_from_live(client, name))
    return names


def judge(
    client, catalog: Catalog, sql: str, conf: dict, session: dict | None = None
) -> tuple[int, int, int, list[str]]:
    """(findings, disagreements, unknown, what disagreed) for one query.
    `session`: the session's values of SESSION_KEYS (read here if not given)."""
    session = session_values(client, SESSION_KEYS) if session is None else session
    settings = check_settings(conf, session)
    findings = analyze_sql(sql, catalog, settings)
    for f in findings:  # a pass that raised: the checker reports it as a finding, this run as a crash
        if f.kind == "query" and any("could not analyse" in s for s in f.suggestions):
            raise RuntimeError(f.suggestions[0])
    answers = plan_answers(client, sql, copy.deepcopy(findings), {"spark.sql.ansi.enabled": "false", **conf}, True)
    corrected = adopt_plan(copy.deepcopy(findings), answers.results)
    # An unknown verdict is the static model's honest answer, counted apart; a wrong one is a disagreement.
    wrong = [
        f"{f.kind}: static {c.to_json()}"
        for f, c in zip(findings, corrected, strict=True)
        if c is not None and not f.unknown
    ]
    wrong += [f"plan only: {item}" for item in answers.leftover]
    return len(findings) + len(answers.leftover), len(wrong), sum(f.unknown for f in findings), wrong
