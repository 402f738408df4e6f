"""The session extension against plans without it: 200 random queries over
Hive-hash, Spark-hash and plain tables (two- and three-table joins of every
kind, aggregates, windows, unions, filters on partitions, keys and NULLs),
each answering as the plan with bucketing and the extension off.

Replay a failure with SB_SEED=<seed printed> pytest tests/test_extension_randomized.py
"""

from __future__ import annotations

import os
import random

import pytest

from tests.support.extension_tables import TABLES, build_tables, reference_rows, rows
from tests.support.spark import extension_on


@pytest.fixture(scope="module")
def tables(spark, dbt_project):
    return build_tables(spark, dbt_project)


def random_query(rng: random.Random, t: str) -> str:
    """A query over two or three of the tables: joins of every kind on bucket
    or other columns, filters on partitions and keys, aggregates, unions."""
    names = [*TABLES, "plain"]
    a, b, c = rng.sample(names, 3)
    on = rng.choice(["x.k = y.k", "x.k = y.k", "x.k = y.k", "x.k = y.k and x.s = y.s", "x.v = y.v"])
    kind = rng.choice(["join", "left join", "right join", "full join", "left semi join", "left anti join"])
    where = rng.choice(
        ["", "where x.k < 120", "where x.p = '1'", "where x.k in (3, 5, 7) or x.k is null", "where x.s <> 's3'"]
    )

    shape = rng.randrange(5)
    if kind in ("left semi join", "left anti join"):
        body = f"from {t}.{a} x {kind} {t}.{b} y on {on} {where}"
        cols = "x.k, x.v"
    else:
        body = f"from {t}.{a} x {kind} {t}.{b} y on {on}"
        if rng.random() < 0.4:
            body += f" {rng.choice(['join', 'left join', 'full join'])} {t}.{c} z on y.k = z.k"
        body += f" {where}"
        cols = "x.k, y.k, x.v, y.v"
    if shape == 0:  # every row, as a count and an order-free checksum
        return f"select count(*), sum(hash({cols})) {body}"
    if shape == 1:
        return f"select x.k, count(*), sum(x.v) {body} group by x.k"
    if shape == 2:
        return f"select count(*), count(distinct x.k) {body}"
    if shape == 3:
        return (
            f"select k, count(*), max(v) from (select k, v from {t}.{a} union all select k, v from {t}.{b}) u"
            f" where k is not null group by k"
        )
    return f"select k, v, rank() over (partition by k order by v) from {t}.{a} where k < 60"


def test_randomized_queries_answer_as_unbucketed_plans(spark, tables):
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    for i in range(200):
        sql = random_query(rng, tables)
        with extension_on(spark):
            got = rows(spark, sql)
        assert got == reference_rows(spark, sql), f"SB_SEED={seed}, query {i}: {sql}"
