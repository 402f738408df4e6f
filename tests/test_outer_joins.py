"""The join kinds Spark plans after narrowing outer joins (EliminateOuterJoin),
as the checker models them (checker/outer_joins.py). Each case's kinds were
read off Spark 4's optimized plans; tests/test_checker_corpus.py compares
the verdicts they lead to with the physical plans."""

from __future__ import annotations

import pytest
import sqlglot

from spark_bucketing.checker.outer_joins import planned_join_kinds, rejected_aliases


def kinds(sql: str) -> list[str]:
    select = sqlglot.parse_one(sql, read="spark")
    return planned_join_kinds(select, select.args["from_"].this.alias_or_name)


@pytest.mark.parametrize(
    "sql, expected",
    [
        ("select * from a full join b on a.k = b.k", ["full"]),
        ("select * from a left join b on a.k = b.k", ["left"]),
        # a WHERE comparison on the padded side
        ("select * from a left join b on a.k = b.k where b.v > 1", ["inner"]),
        ("select * from a right join b on a.k = b.k where a.v = 'x'", ["inner"]),
        ("select * from a full join b on a.k = b.k where a.v = 1", ["left"]),
        ("select * from a full join b on a.k = b.k where b.v = 1", ["right"]),
        ("select * from a full join b on a.k = b.k where a.v = 1 and b.v = 2", ["inner"]),
        ("select * from a full join b on a.k = b.k where a.v + b.v > 2", ["inner"]),
        ("select * from a left join b on a.k = b.k where b.v is not null", ["inner"]),
        ("select * from a left join b on a.k = b.k where not (b.v = 3)", ["inner"]),
        ("select * from a left join b on a.k = b.k where cast(b.v as int) in (1, 2)", ["inner"]),
        # predicates that keep the padded rows, or may
        ("select * from a left join b on a.k = b.k where b.v is null", ["left"]),
        ("select * from a left join b on a.k = b.k where b.v <=> 1", ["left"]),
        ("select * from a left join b on a.k = b.k where coalesce(b.v, 0) = 0", ["left"]),
        ("select * from a left join b on a.k = b.k where b.v = 1 or a.v = 1", ["left"]),
        ("select * from a left join b on a.k = b.k where a.v = 1", ["left"]),
        # a later join's equality reaches the earlier join when the later one is inner or right
        ("select * from a full join b on a.k = b.k join c on c.k = b.k", ["right", "inner"]),
        ("select * from a full join b on a.k = b.k join c on c.k = a.k", ["left", "inner"]),
        ("select * from a full join b on a.k = b.k right join c on c.k = b.k", ["right", "right"]),
        ("select * from a full join b on a.k = b.k left join c on c.k = b.k", ["full", "left"]),
        ("select * from a full join b on a.k = b.k full join c on c.k = b.k", ["full", "full"]),
        # a WHERE filter passes a join that keeps its left side, not one that pads it
        ("select * from a left join b on a.k = b.k join c on c.k = a.k where b.v = 1", ["inner", "inner"]),
        ("select * from a left join b on a.k = b.k full join c on c.k = a.k where b.v = 1", ["inner", "left"]),
        ("select * from a left join b on a.k = b.k full join c on c.k = a.k where c.v = 1", ["left", "right"]),
    ],
)
def test_planned_kinds(sql, expected):
    assert kinds(sql) == expected


def test_unqualified_columns_name_no_side():
    assert rejected_aliases(sqlglot.parse_one("v = 1 and b.w > 2", read="spark")) == {"b"}
