"""Generated queries for the checker's randomized comparison with Spark's
plans (tests/test_checker_randomized.py, benchmarks/checker_randomized.py):
a seeded generator of the shapes people write (joins of two and three
relations through subqueries and CTEs, renamed, cast and computed keys,
aggregates, DISTINCT, windows, UNION ALL, outer joins, IN / EXISTS / NOT
EXISTS, point lookups, broadcast hints) over Spark-hash tables of several
counts and key types, Hive-format and plain tables; and the judge that
compares each static finding with the plan as `--catalog live` does."""

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
    def __init__(self, rng: random.Random):
        self.rng = rng
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
