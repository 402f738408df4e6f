"""The session extension loaded by default where dbt runs Spark in its own process (issue 90): the package's
dbt plugin adds it to the session a `method: session` target starts, for projects that install the dbt
package, merged with the user's settings; a project without the package gets stock's session; with
SPARK_BUCKETING_EXTENSION=off the run goes without it and says what that costs, once per command. Each
project runs in a process of its own (a session's extensions are fixed when its JVM starts), the three at
once. The README's project (tests/test_readme_project.py) is the default case end to end."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml
from dbt.adapters.spark.connections import SparkCredentials
from dbt_common.events.base_types import EventLevel

from harness.dbt_project import RELEASE_LOCKS_HOOK
from spark_bucketing import dbt_run_end, extension, session_extension

REPO_ROOT = Path(__file__).resolve().parents[1]
OTHER_EXTENSION = "com.example.TheirExtension"  # a user's own extension (not on the class path: Spark skips it)

# dbt in the process, then what its session is: its extensions and the Exchanges of a join of the two tables.
DRIVER = """
import json, sys
from dbt.cli.main import dbtRunner
from pyspark.sql import SparkSession
from spark_bucketing.plans import executed_plan, exchanges

log = []
ok = all(dbtRunner(callbacks=[lambda e: log.append(e.info.msg)]).invoke(c.split()).success
         for c in ["deps --quiet"] + ["run"] * int(sys.argv[1]))
spark = SparkSession.builder.getOrCreate()
join = "select * from analytics.a join analytics.b on a.k = b.k"
print("RESULT " + json.dumps({"ok": ok, "extensions": spark.conf.get("spark.sql.extensions", ""),
      "exchanges": exchanges(executed_plan(spark, join, **{"spark.sql.autoBroadcastJoinThreshold": "-1"})),
      "log": log}))
"""

MODEL = """{{{{ config({config}, clustered_by=['k'], buckets=4) }}}}
select cast(id % 50 as int) as k, id as v, date_add(date'2026-01-01', cast(id % 3 as int)) as d
from range(0, {rows})
"""
TABLES = {"a": "materialized='bucketed_table'", "b": "materialized='bucketed_table'"}
STOCK_TABLES = {"a": "materialized='table'", "b": "materialized='table'"}
# Daily tables run twice (the second run replaces every day): the package's on both hashes, and stock's
# incremental with the same clustered_by, buckets and partition_by.
DAILY = "partition_by=['d'], incremental_strategy='insert_overwrite'"
PACKAGE_DAILY = {
    "a": f"materialized='bucketed_incremental', {DAILY}",
    "b": f"materialized='bucketed_incremental', {DAILY}, bucket_hash='spark'",
}
STOCK_DAILY = {
    "a": f"materialized='incremental', {DAILY}, file_format='parquet'",
    "b": f"materialized='incremental', {DAILY}, file_format='parquet'",
}


def _project(
    root: Path,
    with_package: bool,
    parameters: dict[str, str],
    models: dict[str, str] = TABLES,
    quiet: bool = True,
    hook: bool = False,
) -> Path:
    """`hook`: the project keeps the end-of-run hook the README asked for before the plugin ran it."""
    (root / "models").mkdir(parents=True)
    hooks = {"on-run-end": [RELEASE_LOCKS_HOOK]} if hook else {}
    (root / "dbt_project.yml").write_text(
        yaml.safe_dump({"name": "p", "version": "1.0", "config-version": 2, "profile": "p", **hooks})
    )
    if with_package:
        (root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(REPO_ROOT)}]}))
    state = root / "state"
    metastore = f"jdbc:derby:;databaseName={state / 'metastore_db'};create=true"
    output = {
        "type": "spark",
        "method": "session",
        "host": "localhost",
        "schema": "analytics",
        "server_side_parameters": {
            "spark.master": "local[1]",
            "spark.ui.enabled": "false",
            "spark.sql.warehouse.dir": str(state / "warehouse"),
            "spark.hadoop.javax.jdo.option.ConnectionURL": metastore,
            "spark.driver.extraJavaOptions": f"-Dderby.system.home={state}",
            **({"spark.log.level": "ERROR"} if quiet else {}),  # else Spark's default level, WARN
            **parameters,
        },
    }
    (root / "profiles.yml").write_text(yaml.safe_dump({"p": {"target": "dev", "outputs": {"dev": output}}}))
    for (name, config), rows in zip(models.items(), (200, 400), strict=True):
        (root / "models" / f"{name}.sql").write_text(MODEL.format(config=config, rows=rows))
    return root


def _start(root: Path, env: dict[str, str], runs: int = 1) -> subprocess.Popen:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_BUCKETING_FAIL"))}
    clean.pop(session_extension.ENV, None)
    return subprocess.Popen(
        [sys.executable, "-c", DRIVER, str(runs)],
        cwd=root,
        env=clean | {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PROFILES_DIR": str(root)} | env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )


def _result(proc: subprocess.Popen) -> dict:
    out, _ = proc.communicate(timeout=900)
    lines = [line for line in out.splitlines() if line.startswith("RESULT ")]
    assert proc.returncode == 0 and lines, out[-6000:]
    result = json.loads(lines[-1].removeprefix("RESULT "))
    assert result["ok"], out[-6000:]
    result["output"] = out
    return result


def _warnings(out: str) -> set[str]:
    """The WARN lines of a process's output by logger and message, numbers and names taken out."""
    return {
        re.sub(r"[0-9a-f_]{6,}|\d+", "#", line.split(" WARN ", 1)[1]) for line in out.splitlines() if " WARN " in line
    }


def test_the_extension_loads_where_the_package_is_installed_and_only_there(tmp_path):
    merged = _start(_project(tmp_path / "merged", True, {"spark.sql.extensions": OTHER_EXTENSION}, hook=True), {})
    stock = _start(_project(tmp_path / "stock", False, {}, STOCK_DAILY, quiet=False), {}, runs=2)
    off = _start(_project(tmp_path / "off", True, {}), {session_extension.ENV: "off"})
    quiet = _start(_project(tmp_path / "quiet", True, {}, PACKAGE_DAILY, quiet=False), {}, runs=2)

    # The user's own extension kept, the package's appended; Hive-hash tables (the default) join in place.
    got = _result(merged)
    assert got["extensions"] == f"{OTHER_EXTENSION},{extension.EXTENSION_CLASS}"
    assert got["exchanges"] == 0
    assert not [m for m in got["log"] if "session extension" in m and "Hive-hash table" in m]

    # A project without the package: stock's session.
    got = _result(stock)
    assert got["extensions"] == ""
    assert not [m for m in got["log"] if "spark_bucketing" in m or "spark-bucketing" in m]
    stock_warnings = _warnings(got["output"])

    # At Spark's default log level, two runs of daily tables on both hashes (the second replacing every day)
    # print no WARN that stock's same runs do not, and no Java stack trace.
    got = _result(quiet)
    assert got["extensions"] == extension.EXTENSION_CLASS
    assert _warnings(got["output"]) <= stock_warnings, _warnings(got["output"]) - stock_warnings
    assert not re.search(r"^\s+at [\w.$]+\(", got["output"], re.M), got["output"][-6000:]

    # Switched off: no extension, Spark shuffles both Hive-hash sides, and the run says so once, naming both
    # (the package's end of run, which the plugin runs: the project has no hook).
    got = _result(off)
    assert got["extensions"] == ""
    assert got["exchanges"] == 2
    said = [m for m in got["log"] if "written by a Spark that does not load the package's session extension" in m]
    assert len(said) == 1 and "2 Hive-hash table(s) (a, b)" in said[0], said
    assert f"spark.sql.extensions={extension.EXTENSION_CLASS}" in said[0] and "LOAD DATA" in said[0]


def _credentials(method: str, **parameters: str) -> SparkCredentials:
    extra = {"port": 10000} if method == "thrift" else {}
    return SparkCredentials(
        host="localhost", method=method, schema="analytics", server_side_parameters=parameters, **extra
    )


def _installed(root: Path, with_package: bool) -> SimpleNamespace:
    if with_package:
        (root / "dbt_packages" / "spark_bucketing").mkdir(parents=True)
        (root / "dbt_packages" / "spark_bucketing" / "dbt_project.yml").write_text("name: spark_bucketing\n")
    return SimpleNamespace(project_root=str(root), packages_install_path="dbt_packages")


def test_which_targets_the_plugin_loads_it_into(tmp_path, monkeypatch):
    monkeypatch.delenv(session_extension.ENV, raising=False)
    project, bare = _installed(tmp_path / "p", True), _installed(tmp_path / "bare", False)
    assert session_extension.wanted(_credentials("session"), project)
    assert not session_extension.wanted(_credentials("thrift"), project)  # the server loads what it is told
    assert not session_extension.wanted(_credentials("session"), bare)
    # What a check takes the sessions to load: the plugin's addition, or the profile's own naming.
    assert session_extension.loads(_credentials("thrift", **{"spark.sql.extensions": extension.EXTENSION_CLASS}), bare)
    assert not session_extension.loads(_credentials("thrift"), project)
    monkeypatch.setenv(session_extension.ENV, "OFF")
    assert not session_extension.wanted(_credentials("session"), project)
    assert not session_extension.loads(_credentials("session"), project)


def test_the_users_settings_are_kept_and_the_extensions_appended(tmp_path):
    jar = tmp_path / "ext.jar"
    theirs = {
        "spark.sql.extensions": f"{OTHER_EXTENSION} ",
        "spark.jars": "/opt/their.jar",
        "spark.driver.extraClassPath": "/opt/their.jar",
        "spark.master": "local[2]",
    }
    assert session_extension.merged(theirs, jar) == {
        "spark.sql.extensions": f"{OTHER_EXTENSION},{extension.EXTENSION_CLASS}",
        "spark.jars": f"/opt/their.jar,{jar}",
        "spark.driver.extraClassPath": f"/opt/their.jar{os.pathsep}{jar}",
        "spark.master": "local[2]",
    }
    assert session_extension.merged({"spark.jars": ""}, jar) == extension.spark_settings(jar)
    # A profile that names the extension already is left as it is.
    named = {"spark.sql.extensions": f"{OTHER_EXTENSION}, {extension.EXTENSION_CLASS}"}
    credentials = _credentials("session", **named)
    assert not session_extension.load_into(credentials, _installed(tmp_path / "p", True))
    assert credentials.server_side_parameters["spark.sql.extensions"] == named["spark.sql.extensions"]


@pytest.fixture
def said(monkeypatch) -> list[tuple[EventLevel, str]]:
    seen: list[tuple[EventLevel, str]] = []
    monkeypatch.setattr(session_extension, "_say", lambda message, level=EventLevel.INFO: seen.append((level, message)))
    return seen


def test_a_pyspark_the_extension_is_not_built_for_goes_on_without_it(monkeypatch, said):
    monkeypatch.setattr(extension, "pyspark_version", lambda: "4.4.0")
    assert session_extension.jar_or_none() is None
    ((level, message),) = said
    assert level == EventLevel.WARN and "built for Spark 3.5 and 4.0 to 4.3; this PySpark is 4.4.0" in message
    assert "Spark reads bucket_hash='hive' tables unbucketed" in message and "Trino" in message


def test_a_jar_that_fails_to_compile_says_how_to_build_it_and_the_run_goes_on(monkeypatch, tmp_path, said):
    """The real compiler on a source that does not compile: the message holds its error and the way to build
    the jar by hand; the jar is not there, and a later command tries again."""
    sources = tmp_path / "scala"
    (sources / "spark4").mkdir(parents=True)
    (sources / "spark35").mkdir()
    (sources / "Broken.scala").write_text('package sparkbucketing\nobject Broken { val x: Int = "no" }\n')
    monkeypatch.setattr(extension, "SOURCES", sources)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert session_extension.jar_or_none() is None
    (compiling, failed) = said
    assert "compiling the Spark session extension for PySpark" in compiling[1]
    assert (
        failed[0] == EventLevel.WARN and "compiling the extension failed" in failed[1] and "type mismatch" in failed[1]
    )
    assert "`spark-bucketing extension`" in failed[1] and f"{session_extension.ENV}=off" in failed[1]
    assert not extension.default_jar().exists()


def test_the_plugin_leaves_the_end_of_run_to_a_projects_own_hook():
    """A project that kept the README's former hook (either macro it named) runs the package's end of run there,
    and the plugin does not run it again: nothing is released or said twice."""

    def manifest(*hooks: str) -> SimpleNamespace:
        nodes = {
            f"operation.p.p-on-run-end-{i}": SimpleNamespace(resource_type="operation", raw_code=h)
            for i, h in enumerate(hooks)
        }
        nodes["model.p.a"] = SimpleNamespace(resource_type="model", raw_code="select 1 -- spark_bucketing.end_of_run")
        return SimpleNamespace(nodes=nodes)

    assert dbt_run_end.hooks_call_it(manifest(RELEASE_LOCKS_HOOK))
    assert dbt_run_end.hooks_call_it(manifest("{{ spark_bucketing.release_failed_runs_locks(results) }}"))
    assert not dbt_run_end.hooks_call_it(manifest("{{ log('done') }}"))
    assert not dbt_run_end.hooks_call_it(manifest())
