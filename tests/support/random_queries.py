"""Random queries over the session extension's test tables
(tests/support/extension_tables.py), for the randomized test in
tests/test_extension.py: two- and three-table joins of every kind on the
bucket columns, on more than them and on others, aggregates, windows,
unions grouped or joined on the bucket column, counts past the coalescing
ratio, sorted tables whose buckets span several partitions, filters on
partitions, keys (point lookups) and NULLs; and what to look for in their plans."""

from __future__ import annotations

import random
import re

from tests.support.extension_tables import EVOLVING, HIVE_V2_EVOLVING, TABLES

EVOLVING_SCAN = re.compile(r"FileScan \w+ [\w.]*\.(?:" + "|".join(EVOLVING) + r")\[.*SelectedBucketsCount")
# Hive bucketing v2 tables (v8d, on a double key, is read unbucketed).
HIVE_V2 = [n for n, (_, config) in TABLES.items() if config.get("bucketing_version") == 2] + sorted(HIVE_V2_EVOLVING)
HIVE_V2_SCAN = re.compile(r"FileScan \w+ [\w.]*\.(?:" + "|".join(HIVE_V2) + r")\[.*SelectedBucketsCount")
# Pairs of v2 tables, each read bucketed: one count, two counts with a common divisor, an evolving one, v1 with v2.
# Pairs with a table sorted by k across partitions (h8s, v8): a bucket's files merged in place of the Sort.
SORTED_PAIRS = [("h8s", "h8s"), ("h8s", "h8"), ("v8", "v8b"), ("v8", "v8")]
HIVE_V2_PAIRS = [("v8", "v8b"), ("v8b", "v4"), ("v4", "v8"), ("evv", "v8b"), ("v8b", "h8b"), ("v8d", "v8b")]


def source(t: str, name: str, alias: str) -> str:
    """A table as a FROM item with the columns k, s, v, p: an evolving table's
    (k, payload, id, day) renamed in a projection, which keeps its bucketing."""
    if name in EVOLVING:
        return f"(select k, payload as s, id as v, cast(day as string) as p from {t}.{name}) {alias}"
    return f"{t}.{name} {alias}"


# Pairs of tables a union of keeps the placement of (8 buckets, one hash), with the extension.
ONE_PLACEMENT = [
    ("h8", "h8b"),
    ("h8o", "h8"),
    ("h8b", "h8o"),
    ("evs", "s8"),
    ("s8", "evs"),
    ("evh", "h8b"),
    ("v8", "v8b"),
    ("evv", "v8"),
]


# Pairs (x, y) whose counts are past the coalescing ratio, one a multiple of the other (4 or 8 and 64, one hash):
# the extension reads the smaller side once per bucket of the larger.
CLONE_PAIRS = [
    ("h64", "h4"),
    ("h4", "h64"),
    ("h8b", "h64"),
    ("h64", "h8"),
    ("h8o", "h64"),
    ("evh", "h64"),
    ("s64", "s4"),
    ("s4", "s64"),
    ("s8s", "s64"),
    ("s64", "s8"),
    ("evs", "s64"),
    ("v32", "v4"),
    ("v4", "v32"),
]


def union_branch(t: str, name: str, alias: str) -> str:
    """A union branch's k and v: an evolving table's days on one spec, so that it reads bucketed."""
    where = f" where {alias}.p <= '2024-01-02'" if name in EVOLVING else ""
    return f"select k, v from {source(t, name, alias)}{where}"


def kept_union(plan) -> bool:
    """Whether a UNION ALL in the physical plan (a JVM SparkPlan) keeps a placement."""
    nodes = [plan]
    while nodes:
        node = nodes.pop()
        if node.nodeName() == "AdaptiveSparkPlan":
            nodes.append(node.executedPlan())
            continue
        if node.nodeName() == "Union" and "UnknownPartitioning" not in node.outputPartitioning().toString():
            return True
        children = node.children().iterator()
        while children.hasNext():
            nodes.append(children.next())
    return False


def random_query(rng: random.Random, t: str) -> str:
    """A query over two or three of the tables: joins of every kind on bucket
    or other columns, filters on partitions and keys, aggregates, unions."""
    names = [*TABLES, *EVOLVING, "plain"]
    a, b, c = rng.sample(names, 3)
    draw = rng.random()
    if draw < 0.15:
        a, b = rng.choice(CLONE_PAIRS)
        c = rng.choice([n for n in names if n not in (a, b)])
    elif draw < 0.25:
        a, b = rng.choice(HIVE_V2_PAIRS)
        c = rng.choice([n for n in names if n not in (a, b)])
    elif draw < 0.33:
        a, b = rng.choice(SORTED_PAIRS)
        c = rng.choice([n for n in names if n not in (a, b)])
    on = rng.choice(
        [
            "x.k = y.k",
            "x.k = y.k",
            "x.k = y.k",
            "x.k = y.k and x.s = y.s",
            "x.s = y.s and x.k = y.k and x.p = y.p",
            "x.v = y.v",
        ]
    )
    kind = rng.choice(["join", "left join", "right join", "full join", "left semi join", "left anti join"])
    # The evolving tables' days on one spec (8 buckets), and the day on the other (16):
    # an evolving table reads bucketed only when its scan selects days of one spec,
    # so x, when evolving, mostly gets one of these.
    one_spec_days = ["where x.p <= '2024-01-02'", "where x.p = '2024-01-03'"]
    if a in EVOLVING and rng.random() < 0.9:
        where = rng.choice(one_spec_days)
    else:
        where = rng.choice(
            [
                "",
                "where x.k < 120",
                "where x.p = '1'",
                "where x.k in (3, 5, 7) or x.k is null",
                # Point lookups, which the extension prunes to the buckets of their values.
                f"where x.k = {rng.randrange(-45, 300)}",
                f"where x.k in ({rng.randrange(-45, 300)}, {rng.randrange(-45, 300)}) and x.s = 's{rng.randrange(7)}'",
                f"where x.k <=> {rng.randrange(-45, 0)} or x.k is null",
                "where x.s <> 's3'",
                *one_spec_days,
            ]
        )

    shape = rng.randrange(5)
    if kind in ("left semi join", "left anti join"):
        body = f"from {source(t, a, 'x')} {kind} {source(t, b, 'y')} on {on} {where}"
        cols = "x.k, x.v"
    else:
        body = f"from {source(t, a, 'x')} {kind} {source(t, b, 'y')} on {on}"
        if rng.random() < 0.4:
            body += f" {rng.choice(['join', 'left join', 'full join'])} {source(t, c, 'z')} on y.k = z.k"
        body += f" {where}"
        cols = "x.k, y.k, x.v, y.v"
    if shape == 0:  # every row, as a count and an order-free checksum
        return f"select count(*), sum(hash({cols})) {body}"
    if shape == 1:
        return f"select x.k, count(*), sum(x.v) {body} group by x.k"
    if shape == 2:
        return f"select count(*), count(distinct x.k) {body}"
    if shape == 3:
        if rng.random() < 0.5:
            a, b = rng.choice(ONE_PLACEMENT)
        union = f"({union_branch(t, a, 'u1')} union all {union_branch(t, b, 'u2')}) u"
        if rng.random() < 0.5:
            return f"select k, count(*), max(v) from {union} where k is not null group by k"
        join = rng.choice(["join", "left join", "full join"])
        return f"select count(*), sum(hash(u.k, u.v, z.v)) from {union} {join} {source(t, c, 'z')} on u.k = z.k"
    return f"select k, v, rank() over (partition by k order by v) from {source(t, a, 'w')} where k < 60"
