"""What users install: a fresh virtualenv that holds only dbt-core and
dbt-spark (session extra), then `pip install <repo>/python_plugin[dbt-templater]`
as the README says. In a scratch dbt project whose profile points at its own
metastore, run from another folder: `dbt run`, `spark-bucketing check
--catalog live --verify` (no --state-dir: the dbt target), `partitions`,
rule SB01 under the dbt templater, and the macro cache that the package's
dbt plugin installs: in the user's cache directory, in the one
SPARK_BUCKETING_MACRO_CACHE names, or none where it says off."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
import yaml

from harness.spark import TEST_JVM_FLAGS
from spark_bucketing.macro_cache import ENV, PRUNED_STAMP
from spark_bucketing.session_extension import ENV as EXTENSION_ENV
from spark_bucketing.sparksession import QUIET_LOG4J

REPO_ROOT = Path(__file__).resolve().parents[1]
TABLE = "select cast(id % 100 as int) as k, concat('v', id) as v from range(0, 400)"


def _run(cmd: list[str], cwd: Path, ok_codes=(0,), env: dict | None = None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", ENV)} | (env or {})
    env = {k: v for k, v in env.items() if v is not None}  # None: the variable taken out
    env["DBT_SEND_ANONYMOUS_USAGE_STATS"] = "false"
    proc = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    assert proc.returncode in ok_codes, (
        f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    )
    return proc


@pytest.fixture(scope="module")
def venv(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("venv") / "v"
    _run([sys._base_executable, "-m", "venv", str(root)], cwd=root.parent)
    # --no-compile: pip would byte-compile every installed file (PySpark's thousands); Python compiles what it imports.
    pip = [str(root / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
    _run([*pip, f"dbt-core=={version('dbt-core')}", f"dbt-spark[session]=={version('dbt-spark')}"], cwd=root.parent)
    before = _run([str(root / "bin" / "python"), "-m", "pip", "freeze"], cwd=root.parent).stdout
    assert "sqlglot" not in before and "sqlfluff" not in before  # nothing of ours came with dbt
    # From a copy: building from a path leaves a build/ folder in the source tree.
    source = root.parent / "python_plugin"
    shutil.copytree(REPO_ROOT / "python_plugin", source, ignore=shutil.ignore_patterns("*.egg-info", "build"))
    _run([*pip, f"{source}[dbt-templater]"], cwd=root.parent)
    return root


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scratch") / "proj"
    state = root / "state"
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "scratch", "version": "1.0.0", "config-version": 2, "profile": "scratch"})
    )
    (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(REPO_ROOT)}]}))
    conf = {
        "spark.master": "local[2]",
        "spark.ui.enabled": "false",
        "spark.sql.warehouse.dir": str(state / "warehouse"),
        "spark.hadoop.javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true",
        "spark.driver.extraJavaOptions": f"-Dderby.system.home={state}"
        f" -Dlog4j2.configurationFile={QUIET_LOG4J} {TEST_JVM_FLAGS}",
        "spark.sql.autoBroadcastJoinThreshold": "-1",
    }
    output = {
        "type": "spark",
        "method": "session",
        "host": "localhost",
        "schema": "scratch",
        "server_side_parameters": conf,
    }
    (root / "profiles.yml").write_text(yaml.safe_dump({"scratch": {"target": "local", "outputs": {"local": output}}}))
    (root / ".sqlfluff").write_text(
        "[sqlfluff]\ndialect = sparksql\ntemplater = dbt\nrules = SB01\n\n"
        "[sqlfluff:templater:dbt]\nproject_dir = .\nprofiles_dir = .\n"
    )
    for name, buckets in (("fact", 8), ("dim", 8), ("dim16", 16)):
        config = f"materialized='bucketed_table', clustered_by=['k'], buckets={buckets}, bucket_hash='spark'"
        (root / "models" / f"{name}.sql").write_text("{{ config(" + config + ") }}\n" + TABLE + "\n")
    # Incremental models, run again below: on a session without the extension, the run's description of the
    # table (a DESCRIBE carrying the extension's request in a comment) is answered by stock Spark. One model's
    # query has comments of its own: a bracketed one, and a line comment last.
    daily = "partition_by=['day'], clustered_by=['k'], buckets=4, bucket_hash='spark'"
    for name, strategy in (("daily", "insert_overwrite"), ("appended", "append")):
        config = f"materialized='bucketed_incremental', incremental_strategy='{strategy}', {daily}"
        query = "select cast(id % 100 as int) as k, concat('v', id) as v,"
        query += " date_add(date'2024-01-01', cast(id % 2 as int)) as day\nfrom range(0, 400)"
        query += " /* two days */ -- last" if name == "daily" else ""
        (root / "models" / f"{name}.sql").write_text("{{ config(" + config + ") }}\n" + query + "\n")
    (root / "tests").mkdir()
    (root / "tests" / "incremental_rows.sql").write_text(
        "select * from (select (select count(*) from {{ ref('daily') }}) as d,"
        " (select count(*) from {{ ref('appended') }}) as a) where d <> 400 or a <> {{ var('appended_rows', 400) }}\n"
    )
    # Column types for `check --catalog local`, which declares the tables from the manifest alone.
    columns = "      - {name: k, data_type: int}\n      - {name: v, data_type: string}\n"
    (root / "models" / "tables.yml").write_text(
        "version: 2\nmodels:\n"
        + "".join(f"  - name: {name}\n    columns:\n{columns}" for name in ("fact", "dim", "dim16"))
    )
    join = (
        "{{ config(materialized='view') }}\n"
        "select f.k, d.v\nfrom {{ ref('fact') }} f\njoin {{ ref('DIM') }} d on f.k = d.k\n"
    )
    (root / "models" / "good_join.sql").write_text(join.replace("DIM", "dim"))
    (root / "models" / "bad_join.sql").write_text(join.replace("DIM", "dim16"))
    return root


def test_installed_package_works_in_a_clean_dbt_spark_venv(venv, scratch, tmp_path):
    bin_ = venv / "bin"
    elsewhere = tmp_path  # not the project: nothing may fall back to ./.demo
    project = ["--project-dir", str(scratch), "--profiles-dir", str(scratch)]
    # The user's cache directory, where the package's dbt plugin keeps compiled macros unless told otherwise.
    user_cache = tmp_path / "user-cache"

    def run(cmd: list[str], cwd: Path, ok_codes=(0,), env: dict | None = None) -> subprocess.CompletedProcess:
        return _run(cmd, cwd, ok_codes, {"XDG_CACHE_HOME": str(user_cache)} | (env or {}))

    run([str(bin_ / "dbt"), "deps", *project], cwd=scratch)
    # Hive's bucketing v2 is written by the session extension, which this session has not loaded:
    # a clear error before anything is written, and every other model built (one dbt process, one JVM).
    v2 = scratch / "models" / "hive_v2.sql"
    v2.write_text(
        "{{ config(materialized='bucketed_table', clustered_by=['k'], buckets=8, bucketing_version=2) }}\n" + TABLE
    )
    # (The suite's environment has SPARK_BUCKETING_EXTENSION=off: the plugin does not load it.)
    first = run([str(bin_ / "dbt"), "run", *project], cwd=scratch, ok_codes=(1,)).stdout
    assert "config 'bucketing_version': 2 needs the spark-bucketing session extension" in first, first
    assert "spark.sql.extensions=sparkbucketing.BucketingExtensions" in first
    assert "PASS=7 WARN=0 ERROR=1" in first, first
    assert not [p for p in (scratch / "state" / "warehouse").rglob("*hive_v2*")]
    # Without the variable, the installed plugin compiles the extension's jar into the user's cache (once,
    # saying so) and loads it into the session dbt starts: the v2 model builds.
    with_it = run(
        [str(bin_ / "dbt"), "run", *project, "--select", "hive_v2"], cwd=scratch, env={EXTENSION_ENV: None}
    ).stdout
    assert "compiling the Spark session extension for PySpark" in with_it and "PASS=1" in with_it, with_it
    assert len(list((user_cache / "spark-bucketing").glob("spark-bucketing-extension-*.jar"))) == 1
    v2.unlink()

    # Incremental runs on the tables `dbt run` built, then the test of their rows: the day replaced, the
    # rows appended once; and `fact` built again, replacing the table (the macro cache's check below).
    again = ["--select", "daily", "appended", "fact", "incremental_rows", "--vars", "{appended_rows: 800}"]
    built = run([str(bin_ / "dbt"), "build", *project, *again], cwd=scratch).stdout
    assert "PASS=4" in built and "ERROR=0" in built, built

    assert "check" in run([str(bin_ / "spark-bucketing"), "--help"], cwd=elsewhere).stdout

    out = run(
        [str(bin_ / "spark-bucketing"), "check", *project, "--catalog", "live", "--verify"]
        + ["--format", "json", "--select", "good_join", "bad_join"],
        cwd=elsewhere,
    ).stdout
    findings = {m["model"]: m["findings"] for m in json.loads(out[out.index("{") :])["models"]}
    (good,) = findings["model.scratch.good_join"]
    (bad,) = findings["model.scratch.bad_join"]
    assert good["shuffle_free"] is True and good["verified"] is True, good
    assert bad["shuffle_free"] is False and bad["verified"] is True, bad
    assert bad["sides"][0]["reasons"] == ["BUCKET_COUNT_MISMATCH"]
    assert not (elsewhere / ".demo").exists()

    # Spark's plans offline: a local session of PySpark (which dbt-spark's session extra installed) declares
    # the tables from the manifest, with no data, and plans the models; no warehouse is read.
    out = run(
        [str(bin_ / "spark-bucketing"), "check", *project, "--catalog", "local", "--no-compile"]
        + ["--format", "json", "--select", "good_join", "bad_join"],
        cwd=elsewhere,
    ).stdout
    local = {m["model"]: m["findings"] for m in json.loads(out[out.index("{") :])["models"]}
    assert [f["verdict_from"] for fs in local.values() for f in fs] == ["plan", "plan"], local
    assert local["model.scratch.good_join"][0]["shuffle_free"] is True
    assert local["model.scratch.bad_join"][0]["sides"][0]["reasons"] == ["BUCKET_COUNT_MISMATCH"]
    assert not list(elsewhere.glob("spark-bucketing-local-*")) and not (elsewhere / "metastore_db").exists()

    out = run([str(bin_ / "spark-bucketing"), "partitions", "scratch.fact", *project], cwd=elsewhere)
    assert "catalog declares: 8 buckets on (k), spark hash" in out.stdout, out.stdout

    lint = run(
        [str(bin_ / "sqlfluff"), "lint", "--format", "json", "models/bad_join.sql", "models/good_join.sql"],
        cwd=scratch,
        ok_codes=(1,),
    )
    by_file = {Path(f["filepath"]).name: f["violations"] for f in json.loads(lint.stdout)}
    assert by_file["good_join.sql"] == []
    (violation,) = by_file["bad_join.sql"]
    assert violation["code"] == "SB01" and violation["start_line_no"] == 4  # the JOIN's line
    assert "BUCKET_COUNT_MISMATCH" in violation["description"]

    # dbt finds the package's plugin in this install: by default the runs' compiled macros are kept in the
    # user's cache directory (every run above set it), and a run that calls the same macros as one before
    # (`fact` replaced again, as in the build) loads every one.
    default = user_cache / "spark-bucketing" / "macros"
    kept = {p.name: p.stat().st_mtime_ns for p in default.iterdir()}
    assert len(kept) > 50, sorted(kept)
    run([str(bin_ / "dbt"), "run", *project, "--select", "fact"], cwd=scratch)
    assert {p.name: p.stat().st_mtime_ns for p in default.iterdir()} == kept  # none compiled and written again
    # Another directory where the variable names one; none where it says off. A full parse compiles macros
    # without starting Spark (a JVM costs this test more than the rest of a command): the same macros as the
    # runs above, so each file it keeps is one the default directory holds, which it leaves as it was.
    parse = [str(bin_ / "dbt"), "parse", "--no-partial-parse", *project]
    cache = tmp_path / "macro-cache"
    run(parse, cwd=scratch, env={ENV: str(cache)})
    named = {p.name for p in cache.iterdir()}
    # The parse compiles the macros the project's model configs call (6 since the package brings no models of
    # its own, issue 82), and the cache's prune stamp.
    assert len(named - {PRUNED_STAMP}) >= 5 and named <= set(kept), sorted(named - set(kept))
    assert {p.name: p.stat().st_mtime_ns for p in default.iterdir()} == kept
    off = tmp_path / "off-user-cache"
    run(parse, cwd=scratch, env={ENV: "off", "XDG_CACHE_HOME": str(off)})
    assert not off.exists()
    # ... where the same parse keeps its macros when the variable does not say off.
    run(parse, cwd=scratch, env={"XDG_CACHE_HOME": str(off)})
    assert {p.name for p in (off / "spark-bucketing" / "macros").iterdir()} == named
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    refused = run([str(bin_ / "dbt"), "ls", *project], cwd=scratch, ok_codes=(1, 2), env={ENV: str(shared)})
    assert f"{ENV}={shared}: others may write to that directory" in refused.stdout + refused.stderr
