"""Many writers, one table: `dbt run` processes (method: session, each its
own JVM) write one table at once through a Hive metastore service on
Postgres, as a parallel backfill does (a Spark-hash table with its records
in table properties, written with and without the session extension; a
Hive-hash table, v1 or v2 by the seed, with its records in partition
parameters; an append with the extension adds files to the Spark-hash
table's days, max_files_per_bucket). Each round starts several runs at
random offsets, with mixed strategies and days that overlap in some rounds,
and a failure injected into one run at a random step in some rounds. After
every round each day holds the rows of the runs that landed, applied whole in
some order (never a mixture, never empty) and no lock entry is left; after
each table's round `bucket_layout` and `bucket_metadata` pass; a run that lost a conflict
says so and that rerunning is safe. Seed printed (SB_SEED=). And a parallel microbatch
backfill: `dbt run` processes over disjoint event-time windows of one table all land.
The commands that run alone (the first builds, the tests after a round, a source's
rebuild) share one more process (harness/dbt_host.py), which reads the catalog
afresh for each."""

from __future__ import annotations

import itertools
import json
import os
import random
import subprocess
import time
from pathlib import Path

import pytest
import yaml

from harness.dbt_host import FRESH_READS, DbtHost
from harness.dbt_process import DBT, REPO_ROOT
from harness.dbt_project import RELEASE_LOCKS_HOOK, ROUTING
from harness.spark import TEST_JVM_FLAGS
from spark_bucketing import extension

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
KEYS = 120  # rows of a day written by insert_overwrite
STEPS = ["after_write", "before_switch", "before_cleanup"]

MODEL = """
{{{{ config(materialized='bucketed_incremental', incremental_strategy=var('strategy', 'insert_overwrite'),
    unique_key=['k', 'day'], clustered_by=['k'], buckets=4, partition_by=['day'], bucket_hash='{hash}',
    bucket_records='{records}', bucketing_version={version}, commit_lock_wait=600,
    max_files_per_bucket=var('max_files', 1)) }}}}
{{% set days = var('days', ['2024-01-01']) %}}
select k, '{{{{ var("tag", "") }}}}' as tag, n, day from (
  {{% for d in days %}}
  select cast(id + {{{{ var('first_key', 0) }}}} as bigint) as k, cast(id as bigint) as n, '{{{{ d }}}}' as day
  from range(0, {{{{ var('rows', 0) }}}}){{{{ ' union all' if not loop.last }}}}
  {{% endfor %}}
)
"""


def fingerprint(rows: list[tuple[int, str, int]]) -> str:
    return f"{len(rows)}:{sum(r[0] for r in rows)}:{sum(r[2] for r in rows)}:{','.join(sorted({r[1] for r in rows}))}"


def apply(rows: list[tuple[int, str, int]], run: dict) -> list[tuple[int, str, int]]:
    """One run's effect on a day's rows, as the strategy defines it (the Python model of the table)."""
    new = [(run["first_key"] + i, run["tag"], i) for i in range(run["rows"])]
    if run["strategy"] == "insert_overwrite":
        return new
    if run["strategy"] == "append":
        return rows + new
    keys = {r[0] for r in new}
    return [r for r in rows if r[0] not in keys] + new


def layout_tests(*models: str) -> str:
    """A schema file that attaches `bucket_layout` and `bucket_metadata` to `models`."""
    tests = ["spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata"]
    return yaml.safe_dump({"version": 2, "models": [{"name": m, "data_tests": tests} for m in models]})


class Writers:
    """A dbt project on the metastore service whose runs are processes of their own."""

    def __init__(self, root: Path, metastore):
        self.root = root
        (root / "models").mkdir(parents=True)
        (root / "dbt_project.yml").write_text(
            yaml.safe_dump(
                {
                    "name": "conc",
                    "version": "1.0.0",
                    "config-version": 2,
                    "profile": "conc",
                    "on-run-end": [RELEASE_LOCKS_HOOK],
                }
            )
        )
        (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(REPO_ROOT)}]}))
        base = {
            "spark.master": "local[1]",
            "spark.ui.enabled": "false",
            "spark.driver.extraJavaOptions": TEST_JVM_FLAGS,
            "spark.sql.shuffle.partitions": "4",
            **metastore.spark_conf(),
        }
        ext = {**base, **extension.spark_settings(extension.build_jar())}
        outputs = {
            name: {
                "type": "spark",
                "method": "session",
                "host": "localhost",
                "schema": "conc",
                "server_side_parameters": conf,
            }
            for name, conf in (("plain", base), ("ext", ext), ("host", {**ext, **FRESH_READS}))
        }
        (root / "profiles.yml").write_text(yaml.safe_dump({"conc": {"target": "plain", "outputs": outputs}}))
        for name, hash_, records in (
            ("conc_spark", "spark", "table_properties"),
            ("conc_hive", "hive", "partition_parameters"),
        ):
            (root / "models" / f"{name}.sql").write_text(MODEL.format(hash=hash_, records=records, version=1))
        (root / "models" / "schema.yml").write_text(layout_tests("conc_spark", "conc_hive"))
        self.count = 0
        proc = self.start("deps")
        out, _ = proc.communicate()
        assert proc.returncode == 0, out[-6000:]
        # The commands that run alone (a first build, the tests after a round, a source's rebuild) in one
        # process and JVM of their own, with the extension (harness/dbt_host.py); the runs that write at
        # once are processes of their own (start).
        self.host = DbtHost(root, self._env(root / "host"))

    def start(self, *args: str, target: str = "plain", env: dict | None = None) -> subprocess.Popen:
        """A dbt command in a process of its own, with its own target folder (dbt's partial parse files)."""
        self.count += 1
        out = self.root / f"p{self.count}"
        cmd = [DBT, *args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        if args[0] != "deps":
            cmd += ["--target", target]
        return subprocess.Popen(
            cmd, cwd=self.root, env=self._env(out, env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )

    @staticmethod
    def _env(out: Path, env: dict | None = None) -> dict[str, str]:
        """A command's environment: its own target folder (dbt's partial parse files) and log folder."""
        return {
            **os.environ,
            "DBT_SEND_ANONYMOUS_USAGE_STATS": "false",
            "DBT_TARGET_PATH": str(out),
            "DBT_LOG_PATH": str(out),
            **(env or {}),
        }

    def check(self, *args: str) -> str:
        """A command that runs alone, in the host process; its output, after asserting it succeeded."""
        ok, out = self.host.invoke(
            [*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root), "--target", "host"]
        )
        assert ok, out[-6000:]
        return out


def run_vars(run: dict) -> str:
    return json.dumps({k: run[k] for k in ("strategy", "days", "tag", "rows", "first_key", "max_files") if k in run})


@pytest.fixture(scope="module")
def writers(metastore, tmp_path_factory):
    writers = Writers(tmp_path_factory.mktemp("concurrent"), metastore)
    yield writers
    writers.host.close()


def _round_runs(rng: random.Random, round_no: int, model: str) -> list[dict]:
    """3 runs: one per strategy on different days (round_no 0), else mixed strategies on days that overlap."""
    runs = []
    for i in range(3):
        if round_no == 0:
            # Different days, one run per strategy.
            strategy, days = ["insert_overwrite", "append", "merge"][i], [DAYS[i]]
        else:
            strategy = rng.choice(["insert_overwrite", "insert_overwrite", "append", "merge"])
            days = [rng.choice(DAYS)] if rng.random() < 0.5 else rng.sample(DAYS, 2)
        rows, first = {
            "insert_overwrite": (KEYS, 0),
            "append": (10, 1000 + 100 * (3 * round_no + i)),
            "merge": (30, rng.randrange(0, KEYS - 30)),
        }[strategy]
        runs.append(
            {
                "strategy": strategy,
                "days": sorted(days),
                "tag": f"r{round_no}w{i}",
                "rows": rows,
                "first_key": first,
                "model": model,
            }
        )
    return runs


def test_concurrent_runs_land_whole_and_lose_nothing(spark, metastore, writers):
    seed = int(os.environ.get("SB_SEED", random.randrange(1 << 30)))
    print(f"SB_SEED={seed}")
    rng = random.Random(seed)
    state: dict[str, dict[str, list]] = {"conc_spark": {}, "conc_hive": {}}
    # The Hive-hash table is a v1 or a v2 table (written by the extension's folder write), by the seed.
    version = rng.choice([1, 2])
    print(f"conc_hive: bucketing_version={version}")
    (writers.root / "models" / "conc_hive.sql").write_text(
        MODEL.format(hash="hive", records="partition_parameters", version=version)
    )
    landed_total = 0
    # Each table is built by one run first: runs that start on a table that does not exist yet each
    # build it from their own rows, and all but the first fail (rerunning is safe).
    seed_run = {"strategy": "insert_overwrite", "days": DAYS, "tag": "seed", "rows": KEYS, "first_key": 0}
    writers.check("run", "--select", *state, "--vars", run_vars(seed_run))
    for model in state:
        state[model] = {day: sorted(apply([], seed_run)) for day in DAYS}
    # Round 0: the Spark-hash table, one run per strategy on different days. Rounds 1 (the Hive-hash
    # table) and 2 (the Spark-hash one): mixed strategies, days that overlap, a failure injected.
    for round_no in range(3):
        model = "conc_hive" if round_no == 1 else "conc_spark"
        kind = min(round_no, 1)
        runs = _round_runs(rng, kind, model)
        failing = rng.randrange(3) if kind == 1 else None
        procs = []
        for i, run in enumerate(runs):
            time.sleep(rng.uniform(0, 2))
            # The Spark-hash table is written with and without the extension; the Hive one keeps its records
            # in partition parameters, which need it.
            # In round 0 (insert_overwrite, append, merge) the append has it, so that it adds files.
            target = "ext" if model == "conc_hive" or i % 2 == (1 if round_no == 0 else 0) else "plain"
            # With the extension an append adds files to the Spark-hash table's days (records in table
            # properties) beside the other runs' rewrites, which compact them.
            run["max_files"] = 3 if target == "ext" else 1
            env = {"SPARK_BUCKETING_FAIL_AT": rng.choice(STEPS)} if i == failing else {}
            run["failing"] = bool(env)
            procs.append(writers.start("run", "--select", model, "--vars", run_vars(run), target=target, env=env))
        outputs = [p.communicate()[0] for p in procs]
        for run, proc, out in zip(runs, procs, outputs, strict=True):
            run["ok"] = proc.returncode == 0
            if not run["ok"] and not run["failing"]:
                # Only a true conflict may fail a run: an append or merge whose partition
                # another run committed since it read.
                assert "another run committed partition" in out and "Rerunning is safe" in out, out[-6000:]
                assert run["strategy"] in ("append", "merge"), out[-6000:]
        landed_total += sum(r["ok"] for r in runs)
        # Each day: the rows of the runs that landed (a failed run's too, where it failed after its commit),
        # applied whole in some order.
        expected = {}
        for day in DAYS:
            before = state[model].get(day, [])
            touching = [r for r in runs if day in r["days"]]
            sure = [r for r in touching if r["ok"]]
            maybe = [r for r in touching if not r["ok"] and r["failing"]]
            allowed = {}
            for k in range(len(maybe) + 1):
                for extra in itertools.combinations(maybe, k):
                    for order in itertools.permutations(sure + list(extra)):
                        rows = before
                        for r in order:
                            rows = apply(rows, r)
                        allowed[fingerprint(rows)] = sorted(rows)
            expected[day] = allowed
        rows = _day_rows(spark, metastore, model)
        for day in DAYS:
            assert rows.get(day, []) in expected[day].values() or (not expected[day] and day not in rows), (
                f"round {round_no}, {model} day {day}: {fingerprint(rows.get(day, []))} is none of the histories "
                f"{sorted(expected[day])} of the runs {runs}"
            )
            if day in rows:
                state[model][day] = rows[day]
        # No lock entry, and no run's side entry (the failed run's go once they are older than the grace period).
        names = metastore.query('select "TBL_NAME" from "TBLS"').split()
        assert not [n for n in names if "__dbt_lock_" in n], names
        if round_no >= 1:
            # Both tables' layout and records after each one's round (the Spark-hash table's round 0 with
            # the Hive one's round 1), in one command.
            out = writers.check("test", "--select", *state)
            assert "ERROR=0" in out and out.count(" PASS spark_bucketing_bucket_") == 4, out[-4000:]
    # 9 runs: the 3 of round 0 land; of the 6 in rounds 1-2, 2 have a failure injected and a few may conflict.
    assert landed_total >= 5


# A microbatch model's source: 40 rows a day from 2024-01-01 00:00 UTC, for 4 days, `tag` naming its version.
MB_DAY_ROWS, MB_DAYS = 40, 4
MB_SOURCE = """
{{{{ config(materialized='table', file_format='parquet', event_time='ts') }}}}
select cast(id % 30 as bigint) as k, '{tag}' as tag, id as n, timestamp_seconds(1704067200 + id * 2160) as ts
from range(0, {rows})
"""
MB_MODEL = """
{{ config(materialized='incremental', incremental_strategy='microbatch', event_time='ts', batch_size='day',
    begin='2024-01-01', clustered_by=['k'], buckets=4, bucket_hash='spark', partition_by=['day'],
    commit_lock_wait=600) }}
select k, tag, n, ts, cast(ts as date) as day from {{ ref('conc_mb_src') }}
"""


def test_a_parallel_microbatch_backfill_lands_every_batch(spark, metastore, writers):
    """Two `dbt run` processes at once, each a backfill window of two days of one microbatch table (dbt runs a
    window's batches one after another), one with the session extension: every batch lands, each day holds
    exactly the source's rows of that day as the backfill read them, one file per bucket and the records kept."""
    root = writers.root
    (root / "macros").mkdir(exist_ok=True)
    (root / "macros" / "incremental.sql").write_text(ROUTING)
    (root / "models" / "conc_mb.sql").write_text(MB_MODEL)
    (root / "models" / "conc_mb.yml").write_text(layout_tests("conc_mb"))

    def source(tag: str) -> None:
        (root / "models" / "conc_mb_src.sql").write_text(MB_SOURCE.format(tag=tag, rows=MB_DAY_ROWS * MB_DAYS))
        writers.check("run", "--select", "conc_mb_src")

    def window(start: str, end: str) -> list[str]:
        return ["--event-time-start", start, "--event-time-end", end]

    source("v1")
    writers.check("run", "--select", "conc_mb", *window("2024-01-01", "2024-01-05"))
    # The backfill reads the source's second version: a day left as the first run wrote it shows v1.
    source("v2")
    procs = [
        writers.start("run", "--select", "conc_mb", *window(start, end), target=target)
        for (start, end), target in ((("2024-01-01", "2024-01-03"), "ext"), (("2024-01-03", "2024-01-05"), "plain"))
    ]
    for proc in procs:
        out = proc.communicate()[0]
        assert proc.returncode == 0 and "ERROR=0" in out and out.count(" OK created batch ") == 2, out[-6000:]
    expected = {
        f"2024-01-0{d + 1}": sorted((n % 30, "v2", n) for n in range(d * MB_DAY_ROWS, (d + 1) * MB_DAY_ROWS))
        for d in range(MB_DAYS)
    }
    assert _day_rows(spark, metastore, "conc_mb") == expected
    out = writers.check("test", "--select", "conc_mb")
    assert "ERROR=0" in out and out.count(" PASS spark_bucketing_bucket_") == 2, out[-4000:]
    names = metastore.query('select "TBL_NAME" from "TBLS"').split()
    assert not [n for n in names if "__dbt_lock_" in n], names


def _day_rows(spark, metastore, model: str) -> dict[str, list[tuple[int, str, int]]]:
    """Each listed partition's rows, read from the folder the metastore holds for it."""
    listed = metastore.query(
        'select p."PART_NAME", s."LOCATION" from "PARTITIONS" p join "TBLS" t on p."TBL_ID" = t."TBL_ID" '
        'join "SDS" s on p."SD_ID" = s."SD_ID" join "DBS" d on t."DB_ID" = d."DB_ID" '
        f"where d.\"NAME\" = 'conc' and t.\"TBL_NAME\" = '{model}'"
    )
    out = {}
    for line in listed.split():
        name, location = line.split("|", 1)
        read = spark.read.parquet(location)
        out[name.split("=", 1)[1]] = sorted((r.k, r.tag, r.n) for r in read.select("k", "tag", "n").collect())
    return out
