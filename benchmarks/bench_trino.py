"""Trino joining and aggregating two of the package's tables, against the same rows in unbucketed tables
(issue 84): what Trino 476 does with the buckets the package writes.

One dbt build (a process of its own, on a Hive metastore service) makes four tables of the same rows: two
`bucketed_table`s (Hive v1, bucketed by `k`, the default hash) and two dbt-spark `table`s without buckets.
Trino (one node, harness/trino_server.py) then runs the same query over each pair, the pairs alternated, each
query twice after one run of both to warm the JVM; printed per pair: the best wall time, the remote exchanges
of its plan and the rows Trino moved between tasks (`internalNetworkInputPositions`).

    .venv/bin/python benchmarks/bench_trino.py [--rows N] [--buckets B]"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from harness.dbt_process import DbtProcessProject  # noqa: E402
from harness.metastore_service import MetastoreService  # noqa: E402
from harness.trino_server import TrinoServer, remote_exchanges  # noqa: E402

SCHEMA = "bench_trino"
QUERY = "select a.k, count(*) as n, sum(b.w) as w from {left} a join {right} b on a.k = b.k group by a.k"
# Trino's choice on tables without statistics is a broadcast of one side; the bucketed plan is what a
# PARTITIONED join gets.
SESSION = {"join_distribution_type": "PARTITIONED"}


def build(root: Path, metastore: MetastoreService, rows: int, buckets: int) -> float:
    project = DbtProcessProject(root, schema=SCHEMA, **{"spark.sql.shuffle.partitions": "8", **metastore.spark_conf()})
    left = f"select id % {rows // 4} as k, id as v, concat('r', id) as s from range(0, {rows})"
    right = f"select id % {rows // 4} as k, id * 3 as w from range(0, {rows // 2})"
    bucketed = {"materialized": "bucketed_table", "clustered_by": ["k"], "buckets": buckets}
    for name, sql in (("left", left), ("right", right)):
        project.write_model(f"{name}_bucketed", sql, bucketed)
        project.write_model(f"{name}_plain", sql, {"materialized": "table", "file_format": "parquet"})
    start = time.perf_counter()
    project.dbt("run")
    return time.perf_counter() - start


def query(kind: str) -> str:
    return QUERY.format(left=f"hive.{SCHEMA}.left_{kind}", right=f"hive.{SCHEMA}.right_{kind}")


def measure(trino: TrinoServer, kind: str) -> tuple[float, int]:
    """The query's wall time and the rows Trino moved between tasks."""
    start = time.perf_counter()
    _, rows, query_id = trino.query_info(query(kind), SESSION)
    elapsed = time.perf_counter() - start
    assert rows
    return elapsed, int(trino.query_stats(query_id)["internalNetworkInputPositions"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rows", type=int, default=4_000_000)
    parser.add_argument("--buckets", type=int, default=16)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-trino-"))
    metastore = MetastoreService(base / "warehouse", jvm_flags="")
    metastore.start()
    trino = TrinoServer(base / "trino", metastore)
    try:
        (base / "trino").mkdir()
        trino.start()
        print(f"Trino started in {trino.start_seconds:.1f} s")
        seconds = build(base / "dbt", metastore, args.rows, args.buckets)
        print(f"built 4 tables of {args.rows:,} and {args.rows // 2:,} rows in {seconds:.0f} s")
        for kind in ("bucketed", "plain"):  # warm-up: each once
            measure(trino, kind)
        results: dict[str, list[tuple[float, int]]] = {"bucketed": [], "plain": []}
        for order in (("bucketed", "plain"), ("plain", "bucketed")):
            for kind in order:
                results[kind].append(measure(trino, kind))
        print(f"\n{'tables':<10} {'best s':>8} {'exchanges':>10} {'rows moved':>12}")
        for kind, runs in results.items():
            best = min(runs)
            exchanges = len(remote_exchanges(trino.explain(query(kind), SESSION)))
            print(f"{kind:<10} {best[0]:>8.2f} {exchanges:>10} {best[1]:>12,}")
    finally:
        trino.stop()
        metastore.stop()


if __name__ == "__main__":
    main()
