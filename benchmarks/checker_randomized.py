"""The checker's static model against Spark's plans on generated queries
(issue 64): a seeded generator of the shapes people write (joins of 2-3
relations through subqueries and CTEs, renamed and cast keys, extra join
keys, aggregates, DISTINCT, windows, UNION ALL, IN / EXISTS / NOT EXISTS,
point lookups, broadcast hints) over Spark-hash tables of several counts and
key types, Hive-format and plain tables, with the session extension off and
on. Each query's findings are planned as `--catalog live` plans them; a
finding the plan answers otherwise, or an operator or pruned scan only the
plan has, is a disagreement of the static model. Prints the rate per shape
and examples.

    .venv/bin/python benchmarks/checker_randomized.py [--seed N] [--queries 300]
"""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.spark import make_session  # noqa: E402
from spark_bucketing.checker.engines import SESSION_KEYS  # noqa: E402
from spark_bucketing.checker.verify import PlanError, session_values  # noqa: E402
from spark_bucketing.extension import SWITCH  # noqa: E402
from spark_bucketing.metadata import SparkClient  # noqa: E402
from tests.support.checker_queries import Gen, build_tables, judge  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seed", type=int, default=random.randrange(1_000_000))
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--examples", type=int, default=15)
    args = parser.parse_args()
    print(f"seed {args.seed}, {args.queries} queries per extension setting")
    spark = make_session(Path(tempfile.mkdtemp(prefix="sb-checker-random-")))
    client = SparkClient(spark)
    catalog = build_tables(client)
    session = session_values(client, SESSION_KEYS)  # the session's settings, the same for every query
    for extension in (False, True):
        rng = random.Random(args.seed)
        conf = {SWITCH: str(extension).lower()}
        totals, by_tag, bad_by_tag, examples, crashes, unplanned = Counter(), Counter(), Counter(), [], [], []
        started = time.perf_counter()
        for _ in range(args.queries):
            gen = Gen(rng)
            sql = gen.query()
            try:
                found, wrong, unknown, what = judge(client, catalog, sql, conf, session)
            except PlanError as exc:  # the generator's mistake, not the checker's
                unplanned.append(f"{sql}\n    {exc}")
                continue
            except Exception as exc:  # noqa: BLE001 - a crash is a finding of this run
                crashes.append(f"{sql}\n    {type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                continue
            totals.update(findings=found, disagreements=wrong, unknown=unknown, queries=1)
            by_tag.update(gen.tags)
            if wrong:
                bad_by_tag.update(gen.tags)
                if len(examples) < args.examples:
                    examples.append(f"{sql}\n    " + "\n    ".join(what))
        seconds = time.perf_counter() - started
        print(
            f"\nextension {'on' if extension else 'off'}: {totals['queries']} queries, {totals['findings']} findings, "
            f"{totals['disagreements']} disagree with the plan, {totals['unknown']} unknown, {len(crashes)} crashes "
            f"({seconds:.0f} s; {len(unplanned)} generated queries Spark could not plan)"
        )
        for tag, n in sorted(by_tag.items(), key=lambda x: -bad_by_tag[x[0]] / x[1]):
            print(f"  {tag:12s} {bad_by_tag[tag]:4d} of {n:4d} queries disagree")
        for text in examples + crashes[:5] + unplanned[:3]:
            print(f"\n  {text}")
    spark.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
