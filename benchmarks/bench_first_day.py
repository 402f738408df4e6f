"""A new project's first `dbt build`, the package against stock dbt-spark (issue 82): what dbt prints and
when the first model starts.

Two projects of their own, not the demo: `users` (a table bucketed by user_id), `events` (a daily
incremental bucketed by user_id), a join of the two, and (the package's) `bucket_layout` and
`bucket_metadata` tests; stock builds the same models as dbt-spark's `table` and `incremental` with
`clustered_by` and `buckets`. Each `dbt build` runs in a process of its own from an empty warehouse, the
sides alternated, twice; printed per build: the seconds from the process start to dbt's "Found" line (the
parse done) and to the first model's START, the whole build, and the lines, WARN lines and Java stack-trace
lines dbt's output holds.

    .venv/bin/python benchmarks/bench_first_day.py [--cold] [--quiet]

--cold: the macro cache in a new directory and no target/ (a full parse), as a project's very first run;
--quiet: the profile sets spark.log.level: ERROR, as the README's does."""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
DBT = Path(sys.executable).with_name("dbt")
USERS = "select cast(id as int) as user_id, concat('u', id) as email from range(0, 1000)"
EVENTS = (
    "select cast(id % 1000 as int) as user_id, id as event_id, date_add(date'2026-01-01', cast(id % 5 as int))"
    " as event_date from range(0, 5000)\n{% if is_incremental() %} where id % 5 >= 3 {% endif %}"
)
JOIN = (
    "{{ config(materialized='table') }}\nselect u.user_id, count(*) as events from {{ ref('users') }} u\n"
    "join {{ ref('events') }} e on u.user_id = e.user_id group by u.user_id"
)
PACKAGE = {
    "users": "materialized='bucketed_table', clustered_by=['user_id'], buckets=8, bucket_hash='spark'",
    "events": "materialized='bucketed_incremental', partition_by=['event_date'], clustered_by=['user_id'],"
    " buckets=8, bucket_hash='spark'",
}
STOCK = {
    "users": "materialized='table', file_format='parquet', clustered_by=['user_id'], buckets=8",
    "events": "materialized='incremental', incremental_strategy='insert_overwrite', file_format='parquet',"
    " partition_by=['event_date'], clustered_by=['user_id'], buckets=8",
}


def make_project(root: Path, package: bool, quiet: bool) -> None:
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(f"name: {root.name}\nversion: '1.0'\nconfig-version: 2\nprofile: p\n")
    params = f"        spark.sql.warehouse.dir: {root}/state/warehouse\n"
    metastore = f"jdbc:derby:;databaseName={root}/state/metastore_db;create=true"
    params += f'        spark.hadoop.javax.jdo.option.ConnectionURL: "{metastore}"\n'
    params += f'        spark.driver.extraJavaOptions: "-Dderby.system.home={root}/state"\n'
    params += "        spark.log.level: ERROR\n" if quiet else ""
    (root / "profiles.yml").write_text(
        "p:\n  target: dev\n  outputs:\n    dev:\n      type: spark\n      method: session\n      host: localhost\n"
        "      schema: analytics\n      server_side_parameters:\n" + params
    )
    configs = PACKAGE if package else STOCK
    for name, sql in (("users", USERS), ("events", EVENTS)):
        (root / "models" / f"{name}.sql").write_text("{{ config(" + configs[name] + ") }}\n" + sql + "\n")
    (root / "models" / "user_events.sql").write_text(JOIN + "\n")
    tests = "[spark_bucketing.bucket_layout]" if package else "[]"
    events_tests = "[spark_bucketing.bucket_layout, spark_bucketing.bucket_metadata]" if package else "[]"
    (root / "models" / "schema.yml").write_text(
        f"version: 2\nmodels:\n  - name: users\n    data_tests: {tests}\n    columns:\n      - name: user_id\n"
        f"        data_tests: [unique, not_null]\n  - name: events\n    data_tests: {events_tests}\n"
    )
    if package:
        (root / "packages.yml").write_text(f"packages:\n  - local: {REPO_ROOT}\n")
        (root / "macros").mkdir()
        (root / "macros" / "is_incremental.sql").write_text(
            "{% macro is_incremental() %}{{ return(spark_bucketing.is_incremental()) }}{% endmacro %}\n"
        )
        subprocess.run([str(DBT), "deps", "--quiet", "--profiles-dir", "."], cwd=root, check=True, env=_env())


def _env(**extra: str) -> dict:
    return {**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", **extra}


def build(root: Path, cold: bool) -> dict:
    shutil.rmtree(root / "state", ignore_errors=True)
    extra = {}
    if cold:
        shutil.rmtree(root / "target", ignore_errors=True)
        extra["SPARK_BUCKETING_MACRO_CACHE"] = tempfile.mkdtemp(prefix="bench-first-day-cache-")
    started = time.time()
    done = subprocess.run(
        [str(DBT), "build", "--profiles-dir", "."],
        cwd=root,
        env=_env(**extra),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    total = time.time() - started
    out = re.sub(r"\x1b\[[0-9;]*m", "", done.stdout)

    def seconds_to(pattern: str) -> float | None:
        found = re.search(r"(\d\d):(\d\d):(\d\d)\s+" + pattern, out)
        if found is None:
            return None
        h, m, s = map(int, found.groups())
        local = time.localtime(started)
        return h * 3600 + m * 60 + s - (local.tm_hour * 3600 + local.tm_min * 60 + local.tm_sec + started % 1)

    lines = out.splitlines()
    return {
        "rc": done.returncode,
        "parsed": seconds_to("Found"),
        "first": seconds_to(r"1 of \d+ START"),
        "total": total,
        "lines": len(lines),
        "warn": sum(" WARN " in line for line in lines),
        "stack": sum(bool(re.match(r"\s+at [\w.$]+\(", line)) for line in lines),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cold", action="store_true", help="a new macro cache and a full parse each build")
    parser.add_argument("--quiet", action="store_true", help="the profile sets spark.log.level: ERROR")
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="bench-first-day-"))
    projects = {"package": base / "package", "stock": base / "stock"}
    for side, root in projects.items():
        make_project(root, side == "package", args.quiet)
    print(
        f"side      round rc  parsed  first START  total  lines  WARN  stack   (cold={args.cold}, quiet={args.quiet})"
    )
    for round_, order in ((1, ("package", "stock")), (2, ("stock", "package"))):
        for side in order:
            r = build(projects[side], args.cold)
            print(
                f"{side:<9} {round_:>5} {r['rc']:>2} {r['parsed'] or 0:>7.1f} {r['first'] or 0:>12.1f}"
                f" {r['total']:>6.1f} {r['lines']:>6} {r['warn']:>5} {r['stack']:>6}",
                flush=True,
            )
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
