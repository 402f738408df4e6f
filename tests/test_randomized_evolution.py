"""Randomized incremental runs under on_bucket_change='evolve': new partitions,
overwrites, appends, bucket count changes (up and down, power-of-two and
not) and column changes (a column added with on_schema_change=
'append_new_columns', or one added and one dropped with 'sync_all_columns':
the table's columns change in the catalog only). After every run a bucketed join, a GROUP BY on the bucket key and point
lookups must answer exactly as they do with bucketing disabled, and as the
independent model of the data says.

Replay a failure with SB_SEED=<seed printed in the failure> pytest tests/test_randomized_evolution.py
"""

from __future__ import annotations

import os
import random

from spark_bucketing import plans
from tests.support.incremental import Expected, declared, partition_layout_problems, run_model, table_rows

RUNS = 26
COUNTS = [3, 4, 5, 8, 12, 16]


def _answers(spark, table, dim, lookups):
    join = spark.sql(f"select count(*), sum(e.id) from {table} e join {dim} d on e.k = d.k").first()
    groups = sorted(tuple(r) for r in spark.sql(f"select k, count(*), sum(id) from {table} group by k").collect())
    points = [spark.sql(f"select count(*) from {table} where k = {k}").first()[0] for k in lookups]
    return tuple(join), groups, points


def _plan_uses_buckets(spark, table):
    plan = plans.executed_plan(spark, f"select k, count(*) from {table} group by k")
    return plans.exchanges(plan, "hashpartitioning") == 0


def test_randomized_incremental_runs_answer_like_unbucketed_reads(spark, dbt_project):
    seed = int(os.environ.get("SB_SEED", random.randrange(1_000_000)))
    print(f"randomized evolution seed: {seed}")
    rng = random.Random(seed)
    schema = dbt_project.schema
    dbt_project.write_model(
        "rdim",
        "select cast(id as int) as k, id * 10 as w from range(0, 300)",
        {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 8, "bucket_hash": "spark"},
    )
    dbt_project.run("rdim")
    name, table, dim = "revents", f"{schema}.revents", f"{schema}.rdim"
    expected = Expected()
    buckets, next_day, tag = 8, 0, 0
    history = []
    bucketed_runs = 0
    kinds = ["new", "overwrite", "append", "resize", "backfill", "columns"]
    extra: list[str] = []
    plan = ["create"] + rng.sample(kinds, len(kinds))  # every kind at least once, then at random
    plan += [rng.choice(kinds + ["resize"]) for _ in range(RUNS - len(plan))]
    for run, op in enumerate(plan):
        existing = sorted(d for d, c in expected.days.items() if c)
        if op == "resize":
            buckets = rng.choice([c for c in COUNTS if c != buckets])
        if op in ("create", "new"):
            days = list(range(next_day, next_day + rng.randint(1, 2)))
        elif op == "backfill":
            days = existing  # rewrite everything with the current spec: the table converges
        else:
            days = sorted(rng.sample(existing, rng.randint(1, min(3, len(existing)))))
            if op == "resize" and rng.random() < 0.5:
                days.append(next_day)
        next_day = max(next_day, max(days) + 1)
        tag += 1
        on_schema_change = "append_new_columns"
        if op == "columns":
            if extra and rng.random() < 0.5:
                extra = [c for c in extra if c != rng.choice(extra)]
                on_schema_change = "sync_all_columns"
            extra = [*extra, f"c{tag}"]
        vars_ = {
            "bucket_hash": "spark",
            "buckets": buckets,
            "on_change": "evolve",
            "days": days,
            "tag": tag,
            "rows": rng.choice([40, 120, 200]),
            "keys": 300,
            "strategy": "append" if op == "append" else "insert_overwrite",
            "extra": extra,
            "on_schema_change": on_schema_change,
        }
        history.append((op, vars_))
        context = f"seed={seed} run={run} op={op} vars={vars_}"
        run_model(dbt_project, name, vars_)
        expected.apply(spark, vars_)

        assert table_rows(spark, table) == expected.rows(), context
        assert partition_layout_problems(spark, table) == [], context
        # The table has the model's columns; an extra column is NULL in rows written before it, else id + n.
        assert spark.table(table).columns == ["k", "payload", "id", *extra, "day"], context
        for c in extra:
            wrong = spark.sql(f"select count(*) from {table} where {c} is not null and {c} != id + {c[1:]}").first()[0]
            assert wrong == 0, context
        lookups = [rng.randrange(300) for _ in range(3)]
        with_buckets = _answers(spark, table, dim, lookups)
        if declared(spark, table) is not None:
            assert _plan_uses_buckets(spark, table), context
            bucketed_runs += 1
        spark.conf.set("spark.sql.sources.bucketing.enabled", "false")
        try:
            without = _answers(spark, table, dim, lookups)
        finally:
            spark.conf.unset("spark.sql.sources.bucketing.enabled")
        assert with_buckets == without, context
    assert len(history) == RUNS
    assert 0 < bucketed_runs < RUNS, f"seed={seed}: the table was declared bucketed after {bucketed_runs} runs"
