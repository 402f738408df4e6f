"""Cost at scale, side by side with stock dbt-spark: a full build (files,
build time, a downstream join and aggregation) for both hash families, and
one-day incremental runs (insert_overwrite and append) on tables of 10, 100
and 1,000 daily partitions, and a backfill of 300 partitions.

Every build is a `dbt run` of its own (cold JVM included), the two sides'
order alternates (A B, then B A) and each side keeps its best of two. Each
run's SQL statements (from dbt's log) and Spark jobs (from Spark's event log)
are counted. Downstream queries run afterwards in one Spark session, median
of three, sides alternated.

    .venv/bin/python benchmarks/bench_scale.py [--rows 3000000] [--sizes 10 100 1000] [--backfill 300]
        [--only incremental] [--per-day 400] [--daily-buckets 8] [--hashes spark hive] [--without-extension]
        [--models 1] [--catalog derby|postgres] [--connection session|thrift] [--warmup 0] [--no-macro-cache]

`--warmup N`: before the timed one-day `insert_overwrite` runs, each side
runs it N times untimed, in turn (on a Thrift Server: a long-lived Spark
that has run these statements before, its JIT compiled; with `method:
session` every run starts a JVM of its own, so it changes nothing there).
An `append` is not warmed up: each run adds a day's rows again.

Every dbt process, both sides', keeps the macros it compiles in one
directory of the benchmark's and loads those earlier runs compiled (the
macro cache, on by default where the package is installed:
spark_bucketing.macro_cache, docs/configs.md); its first runs fill it.
`--no-macro-cache`: none does, each compiles every macro it calls.

Prints the figures docs/benchmarks.md reports.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from harness.dbt_process import DbtProcessProject  # noqa: E402
from spark_bucketing import macro_cache, session_extension  # noqa: E402
from spark_bucketing.files import data_files  # noqa: E402

if TYPE_CHECKING:
    from harness.metastore_service import MetastoreService
    from harness.thrift_server import ThriftServer

FACT = """
select id as order_id,
       cast(pmod(hash(id, 17), {users}) as int) as user_id,
       date_add(date'2024-01-01', cast(id % {days} as int)) as order_date,
       cast(id % 1000 as double) / 10 as amount,
       concat('sku-', id % 5000) as sku
from range(0, {rows}, 1, {tasks})
"""
DIM = "select cast(id as int) as user_id, concat('user-', id) as user_name from range(0, {users}, 1, 4)"
DAILY = """
select cast(pmod(hash(id, {{{{ var('tag', 0) }}}}), 5000) as int) as k, concat('v', id) as payload,
       date_add(date'2024-01-01', d) as day
from range(0, {per_day}, 1, 1)
cross join (select explode(sequence({{{{ var('first', 0) }}}}, {{{{ var('last', 0) }}}})) as d)
"""
FULL_SIDES = {
    "stock table": {"materialized": "table", "file_format": "parquet"},
    "bucketed_table spark": {"materialized": "bucketed_table", "bucket_hash": "spark"},
    "bucketed_table hive": {"materialized": "bucketed_table", "bucket_hash": "hive"},
}


class Counted:
    """Runs dbt in `project` and counts each run's statements and Spark jobs."""

    def __init__(self, project: DbtProcessProject, events: Path):
        self.project = project
        self.events = events

    def run(self, *args: str, env: dict[str, str] | None = None) -> dict:
        """`dbt run *args` in a process of its own, with `env` over the project's environment."""
        log = self.project.root / "logs" / "dbt.log"
        before_log = log.read_text(errors="replace").count("SQL status:") if log.exists() else 0
        before_jobs = self.jobs()
        kept = self.project.env
        self.project.env = {**kept, **(env or {})}
        try:
            seconds = self.project.dbt("run", *args)
        finally:
            self.project.env = kept
        # dbt's own time for the models ("[OK in 1.23s]"): the run without the process's start and parse.
        model = sum(float(m) for m in re.findall(r"\[\S*OK\S* in ([0-9.]+)s\]", self.project.output))
        statements = log.read_text(errors="replace").count("SQL status:") - before_log
        return {"s": seconds, "model": model, "statements": statements, "jobs": self.jobs() - before_jobs}

    def jobs(self) -> int:
        """Spark jobs started so far: a log per `dbt run` (method: session), or
        the one log of a Thrift Server that serves every run."""
        return sum(
            f.read_text(errors="replace").count('"Event":"SparkListenerJobStart"')
            for f in event_log_files(set(self.events.iterdir()))
        )


def event_log_files(entries: set[Path]) -> list[Path]:
    """The files of event logs: Spark 4 writes a log as one file, or rolled into a folder."""
    return [f for e in entries for f in ([e] if e.is_file() else sorted(p for p in e.rglob("*") if p.is_file()))]


def _runner(counted: Counted, *args: str, env: dict[str, str] | None = None):
    return lambda: counted.run(*args, env=env)


#: Stock's side runs in stock's session: the package's dbt plugin, installed for the package's side of the same
#: project, loads nothing into it (a project without the package gets no extension either).
STOCK_ENV = {session_extension.ENV: session_extension.OFF}


def best_alternating(runs: dict, key: str = "s") -> dict:
    """Each side in `runs` (name -> callable) once forwards, once backwards;
    the best of each by `key` ("s": the process's wall time, "model": dbt's model time)."""
    results: dict = {name: [] for name in runs}
    for order in (list(runs), list(reversed(runs))):
        for name in order:
            results[name].append(runs[name]())
    return {name: min(rs, key=lambda r: r[key]) for name, rs in results.items()}


def same_rows(project: DbtProcessProject, tables: list[str], columns: str) -> None:
    """The sides end with the same rows (a count and an order-free checksum of
    `columns`), read by a dbt process of its own (the embedded metastore admits one JVM)."""
    sql = " union all ".join(
        f"select '{t}' as t, count(*) as n, sum(hash({columns})) as s from {{{{ ref('{t}') }}}}" for t in tables
    )
    project.dbt("show", "--inline", sql, "--output", "json", "--limit", str(len(tables)))
    rows = json.loads(project.output[project.output.index('{\n  "show"') :].split("\n}\n", 1)[0] + "\n}")["show"]
    print("rows, checksum: " + ", ".join(f"{r['t']} {r['n']:,} {r['s']}" for r in rows))
    if len({(r["n"], r["s"]) for r in rows}) != 1:
        raise SystemExit("the sides disagree")


def event_conf(events: Path, **spark_conf: str) -> dict:
    """The benchmark's Spark settings, with an event log in `events`."""
    events.mkdir(parents=True, exist_ok=True)
    return {
        "spark.eventLog.enabled": "true",
        "spark.eventLog.compress": "false",
        "spark.eventLog.dir": str(events),
        "spark.sql.shuffle.partitions": "8",
        **spark_conf,
    }


def project_with_events(root: Path, **spark_conf: str) -> Counted:
    events = root / "events"
    return Counted(DbtProcessProject(root, **event_conf(events, **spark_conf)), events)


def project_on_thrift_server(
    root: Path, server_conf: dict, service: MetastoreService | None
) -> tuple[Counted, ThriftServer]:
    """A project whose runs go to one Spark Thrift Server (dbt-spark's
    method: thrift), started here with the benchmark's settings plus
    `server_conf` (local[2], the JVM's default flags, its own Derby or the
    metastore `service`): a long-lived JVM, as a shared cluster runs it,
    where the session method starts one per `dbt run`. Returns the project
    and the server (stop it)."""
    from harness.thrift_server import ThriftServer

    events = root / "events"
    # The tests' and the session projects' setting (DbtProcessProject), so both connections plan alike.
    conf = event_conf(events, **{"spark.sql.autoBroadcastJoinThreshold": "-1", **server_conf})
    (root / "thrift-server").mkdir(parents=True, exist_ok=True)
    server = ThriftServer(root / "thrift-server", conf=conf, metastore=service, jvm_flags="")
    server.start()
    return Counted(DbtProcessProject(root, thrift_port=server.port), events), server


def files_of(project: DbtProcessProject, model: str) -> int:
    db = project.root / "state" / "warehouse" / f"{project.schema}.db"
    return sum(len(data_files(folder)) for folder in (db / model, db / f"{model}__dbt_alt") if folder.is_dir())


def full_build(base: Path, rows: int, tasks: int, days: int, buckets: int) -> None:
    counted = project_with_events(base / "full")
    project = counted.project
    users = 100_000
    for side, config in FULL_SIDES.items():
        tag = side.split()[-1]
        common = {"clustered_by": ["user_id"], "buckets": buckets}
        project.write_model(
            f"fact_{tag}",
            FACT.format(rows=rows, tasks=tasks, days=days, users=users),
            {**config, **common, "partition_by": ["order_date"]},
        )
        project.write_model(f"dim_{tag}", DIM.format(users=users), {**config, **common})
    project.dbt("run", "--select", "dim_*")
    tags = {side: side.split()[-1] for side in FULL_SIDES}
    best = best_alternating(
        {
            side: _runner(counted, "--select", f"fact_{tag}", env=STOCK_ENV if side.startswith("stock") else None)
            for side, tag in tags.items()
        }
    )
    queries = downstream_queries(project, list(tags.values()))

    print(f"\nFull build: {rows:,} rows in {tasks} input tasks, {days} daily partitions, {buckets} buckets")
    print(
        f"{'side':<22} {'files':>6} {'build s':>8} {'vs stock':>9} {'join s':>7} {'agg s':>7}"
        f" {'vs stock':>9} {'stmts':>6} {'jobs':>5}"
    )
    stock = best["stock table"]["s"]
    stock_q = sum(queries["table"])
    for side in FULL_SIDES:
        tag = side.split()[-1]
        r = best[side]
        join, agg = queries[tag]
        print(
            f"{side:<22} {files_of(project, f'fact_{tag}'):>6} {r['s']:>8.1f} {r['s'] / stock:>8.2f}x"
            f" {join:>7.2f} {agg:>7.2f}"
            f" {(join + agg) / stock_q:>8.2f}x {r['statements']:>6} {r['jobs']:>5}"
        )


def downstream_queries(project: DbtProcessProject, tags: list[str]) -> dict:
    """Join + aggregation per side in one Spark session on the project's metastore."""
    from harness.spark import make_session

    state = project.root / "state"
    spark = make_session(state)
    spark.sql(f"use {project.schema}")
    spark.sql(
        "create temporary function spark_bucketing_hive_hash as 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFHash'"
    )
    out: dict = {tag: ([], []) for tag in tags}
    for order in (tags, list(reversed(tags)), tags):
        for tag in order:
            for i, sql in enumerate(
                [
                    f"select d.user_name, sum(f.amount) from fact_{tag} f join dim_{tag} d on f.user_id = d.user_id"
                    " group by d.user_name",
                    f"select user_id, count(*), sum(amount) from fact_{tag} group by user_id",
                ]
            ):
                start = time.perf_counter()
                spark.sql(sql).write.format("noop").mode("overwrite").save()
                out[tag][i].append(time.perf_counter() - start)
    spark.stop()
    return {tag: (statistics.median(j), statistics.median(a)) for tag, (j, a) in out.items()}


def incremental(
    base: Path,
    sizes: list[int],
    backfill: int,
    per_day: int,
    buckets: int,
    hashes: list[str],
    without_extension: bool,
    models_per_side: int = 1,
    service: MetastoreService | None = None,
    thrift: bool = False,
    warmup: int = 0,
) -> None:
    """The package's side runs as the package's dbt plugin sets it up (the session extension loaded, with
    `method: session`; a Thrift Server started with it), unless `without_extension` (SPARK_BUCKETING_EXTENSION=off
    and a server without it): stock's side runs in stock's session either way (STOCK_ENV).
    `models_per_side` > 1: each side is that many models (tables) run by one
    `dbt run`, as a project's models are; the figures are per model.
    `service`: a metastore service (MetastoreService) to use instead of the
    embedded Derby. `thrift`: every run goes to one Thrift Server.
    `warmup`: untimed one-day insert_overwrite runs per side first."""
    from spark_bucketing import extension

    root = base / ("incremental-no-extension" if without_extension else "incremental")
    server = None
    if thrift:
        settings = {} if without_extension else extension.spark_settings(extension.build_jar())
        counted, server = project_on_thrift_server(root, settings, service)
    else:
        counted = project_with_events(root, **(service.spark_conf() if service else {}))
    ours = STOCK_ENV if without_extension else {}
    setting = (
        (", without the session extension" if without_extension else ", the package's side with the session extension")
        + (", catalog: a Hive metastore service on Postgres" if service else "")
        + (", every run on one Spark Thrift Server (method: thrift)" if thrift else "")
        + (f", {warmup} untimed insert_overwrite run(s) per side first" if warmup else "")
    )
    try:
        incremental_runs(counted, setting, sizes, backfill, per_day, buckets, hashes, models_per_side, warmup, ours)
    finally:
        if server:
            server.stop()


def incremental_runs(
    counted: Counted,
    setting: str,
    sizes: list[int],
    backfill: int,
    per_day: int,
    buckets: int,
    hashes: list[str],
    models_per_side: int,
    warmup: int = 0,
    ours: dict[str, str] | None = None,
) -> None:
    """The one-day runs and the backfill of `incremental`; `setting`: how the runs are set up, for the title;
    `warmup`: untimed one-day insert_overwrite runs per side, in turn, before the timed ones; `ours`: the
    environment of the package's side's processes (stock's: STOCK_ENV)."""
    project = counted.project
    sql = DAILY.format(per_day=per_day)
    common = f"partition_by=['day'], clustered_by=['k'], buckets={buckets}, incremental_strategy=var('strategy')"
    models = project.root / "models"
    configs = {
        **{f"daily_{family}": f"materialized='bucketed_incremental', bucket_hash='{family}'" for family in hashes},
        "daily_stock": "materialized='incremental', file_format='parquet'",
    }
    for name, config in configs.items():
        for i in range(models_per_side):
            model = name if models_per_side == 1 else f"{name}_{i}"
            (models / f"{model}.sql").write_text("{{ config(" + config + ", " + common + ") }}\n" + sql)
    sides = {f"bucketed_incremental {family}": f"daily_{family}" for family in hashes}
    sides["stock incremental"] = "daily_stock"
    if models_per_side > 1:
        sides = {side: f"{name}_*" for side, name in sides.items()}

    def run(model: str, first: int, last: int, strategy: str, *extra: str):
        vars_ = json.dumps({"first": first, "last": last, "strategy": strategy, "tag": first})
        env = STOCK_ENV if model.startswith("daily_stock") else ours
        return lambda: per_model(counted.run("--select", model, "--vars", vars_, *extra, env=env), models_per_side)

    print(
        f"\nIncremental runs: {per_day:,} rows a day, {buckets} buckets (stock: same clustered_by/buckets)"
        + setting
        + (
            f"; {models_per_side} models per side in one `dbt run` each, figures per model"
            if models_per_side > 1
            else ""
        )
    )
    print("model s: dbt's time for the model; wall s: the whole `dbt run` (with method session, its JVM's start too)")
    print(
        f"{'partitions':>10} {'run':<28} {'side':<26} {'model s':>8} {'vs stock':>9} {'wall s':>7} {'vs stock':>9}"
        f" {'vs smallest':>11} {'stmts':>6} {'jobs':>5}"
    )
    first_size: dict = {}
    for n in sizes:
        for model in sides.values():
            run(model, 0, n - 1, "insert_overwrite", "--full-refresh")()
        for strategy in ("insert_overwrite", "append"):
            runs = {side: run(model, n - 1, n - 1, strategy) for side, model in sides.items()}
            for _ in range(warmup if strategy == "insert_overwrite" else 0):
                for warm in runs.values():
                    warm()
            report(n, f"one day, {strategy}", best_alternating(runs, "model"), first_size)
    n = max(sizes)
    for strategy in ("insert_overwrite", "append") if backfill else ():
        runs = {side: run(model, 0, backfill - 1, strategy) for side, model in sides.items()}
        report(n, f"backfill {backfill} days, {strategy}", best_alternating(runs, "model"), first_size)


def per_model(result: dict, models: int) -> dict:
    """A run of `models` models as the figures of one: model time, wall time,
    statements and jobs divided by the count."""
    return {k: v / models for k, v in result.items()} if models > 1 else result


def report(n: int, label: str, best: dict, first_size: dict) -> None:
    stock = best["stock incremental"]
    for side, r in best.items():
        base = first_size.setdefault((label, side), r["model"])
        print(
            f"{n:>10} {label:<28} {side:<26} {r['model']:>8.1f} {r['model'] / stock['model']:>8.2f}x"
            f" {r['s']:>7.1f} {r['s'] / stock['s']:>8.2f}x {r['model'] / base:>10.2f}x"
            f" {r['statements']:>6g} {r['jobs']:>5g}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=3_000_000)
    parser.add_argument("--tasks", type=int, default=12)
    parser.add_argument("--days", type=int, default=3)
    parser.add_argument("--buckets", type=int, default=16)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--backfill", type=int, default=300, help="days of the backfill run (0: none)")
    parser.add_argument("--per-day", type=int, default=400)
    parser.add_argument("--daily-buckets", type=int, default=8, help="buckets of the incremental runs' tables")
    parser.add_argument("--hashes", nargs="+", choices=["spark", "hive"], default=["spark", "hive"])
    parser.add_argument(
        "--without-extension",
        action="store_true",
        help="incremental runs of the package without the session extension (SPARK_BUCKETING_EXTENSION=off)",
    )
    parser.add_argument("--models", type=int, default=1, help="incremental: models per side in one `dbt run`")
    parser.add_argument("--only", choices=["full", "incremental"], default=None)
    parser.add_argument(
        "--catalog",
        choices=["derby", "postgres"],
        default="derby",
        help="incremental runs: each project's embedded Derby, or one Hive metastore service on Postgres",
    )
    parser.add_argument(
        "--connection",
        choices=["session", "thrift"],
        default="session",
        help="incremental runs: Spark in each `dbt run` (method: session), or one Spark Thrift Server for all",
    )
    parser.add_argument("--warmup", type=int, default=0, help="untimed one-day insert_overwrite runs per side first")
    parser.add_argument("--base", type=Path, default=None, help="folder for the projects (default: a temporary one)")
    parser.add_argument(
        "--no-macro-cache",
        action="store_true",
        help="every side's dbt runs compile each macro anew (SPARK_BUCKETING_MACRO_CACHE=off)",
    )
    args = parser.parse_args()
    base = args.base or Path(tempfile.mkdtemp(prefix="sb-bench-scale-"))
    # The environment of every dbt process this starts, stock's too (its macros are cached as well).
    os.environ[macro_cache.ENV] = macro_cache.OFF if args.no_macro_cache else str(base / "macro-cache")
    if args.only in (None, "full"):
        full_build(base, args.rows, args.tasks, args.days, args.buckets)
    if args.only in (None, "incremental"):
        service = None
        if args.catalog == "postgres":
            from harness.metastore_service import MetastoreService

            # Its JVM with default flags, as a production service runs.
            service = MetastoreService(base / "metastore-warehouse", jvm_flags="")
            service.start()
        try:
            incremental(
                base,
                args.sizes,
                args.backfill,
                args.per_day,
                args.daily_buckets,
                args.hashes,
                args.without_extension,
                args.models,
                service,
                args.connection == "thrift",
                args.warmup,
            )
        finally:
            if service:
                service.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
