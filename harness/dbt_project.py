"""Temporary dbt projects that install this package, run in-process with dbtRunner."""

from __future__ import annotations

import hashlib
import json
import os
import re
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from dbt.cli.main import dbtRunner, dbtRunnerResult

from harness.spark import sql_string

# The package's fault-injection hook (macros/utils/errors.sql: checkpoint).
FAIL_AT = "SPARK_BUCKETING_FAIL_AT"


#: The end-of-run hook the README asked projects to add before the plugin ran the package's end of run itself
#: (docs/incremental.md, "Concurrent runs"): a project that kept it still works.
RELEASE_LOCKS_HOOK = "{{ spark_bucketing.end_of_run(results) }}"

#: dbt's flag (hidden, for its tests) that runs an invocation's nodes in the calling thread instead of a new
#: pool thread per invocation. A new Python thread is a new JVM thread (PySpark pins one to each), and the
#: embedded Hive metastore builds a store for every thread that reaches it (a HiveConf copy, a DataNucleus
#: persistence manager, its start-up queries): a sixth of a worker JVM's samples over a loop of incremental
#: runs. The runs of a one-thread profile are sequential either way; a test that passes `--threads` keeps
#: dbt's pool, and with it the threads it tests. Method session only: with method thrift the flag leaves
#: dbt-spark running a node's statements on a connection it has released ("Transport not open"), and the
#: metastore's threads are the Thrift Server's, not this process's.
SINGLE_THREADED = "--single-threaded"

#: The project file that routes dbt-spark's `incremental` to the package, so that dbt's microbatch batches
#: run on bucketed tables (docs/incremental.md, "Microbatch"): dbt makes batches only for that materialization.
ROUTING = """
{% materialization incremental, adapter='spark' %}
  {{ return(spark_bucketing.incremental_materialization()) }}
{% endmaterialization %}
"""

#: The project macro that gives dbt's is_incremental() the package's answer (README, "Using the package").
IS_INCREMENTAL = "{% macro is_incremental() %}{{ return(spark_bucketing.is_incremental()) }}{% endmacro %}\n"


@dataclass
class DbtProject:
    root: Path
    schema: str
    package_dir: Path
    name: str = "sb_it"
    profile_overrides: dict = field(default_factory=dict)
    project_overrides: dict = field(default_factory=dict)

    def setup(self) -> None:
        (self.root / "models").mkdir(parents=True, exist_ok=True)
        (self.root / "dbt_project.yml").write_text(
            yaml.safe_dump(
                {
                    "name": self.name,
                    "version": "1.0.0",
                    "config-version": 2,
                    "profile": "sb_it",
                    "model-paths": ["models"],
                    "macro-paths": ["macros"],
                    # Replaced folders go right after the switch: the suite's tests see the
                    # table's folder as a run leaves it. test_concurrent_runs.py and
                    # test_retention.py keep the default.
                    "models": {"+replaced_folders_retention": 0},
                    **self.project_overrides,
                }
            )
        )
        (self.root / "packages.yml").write_text(yaml.safe_dump({"packages": [{"local": str(self.package_dir)}]}))
        output = {"type": "spark", "method": "session", "host": "localhost", "schema": self.schema}
        output.update(self.profile_overrides)
        (self.root / "profiles.yml").write_text(yaml.safe_dump({"sb_it": {"target": "it", "outputs": {"it": output}}}))
        self.dbt("deps")

    def write_model(self, name: str, sql: str, config: dict | None = None) -> None:
        body = textwrap.dedent(sql).strip()
        if config is not None:
            args = ", ".join(f"{k}={v!r}" for k, v in config.items())
            body = "{{ config(" + args + ") }}\n" + body
        (self.root / "models" / f"{name}.sql").write_text(body + "\n")

    def write_file(self, relative: str, text: str) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip())

    def test_model(self, name: str, *tests: str, extra: tuple[str, ...] = ()) -> dbtRunnerResult:
        """Attaches generic tests (e.g. spark_bucketing.bucket_metadata) to a model and runs `dbt test` on it."""
        self.write_file(
            f"models/{name}.yml",
            f"version: 2\nmodels:\n  - name: {name}\n    data_tests: [{', '.join(tests)}]\n",
        )
        return self.dbt("test", "--select", name, *extra)

    def remove_model(self, name: str) -> None:
        (self.root / "models" / f"{name}.sql").unlink(missing_ok=True)

    def dbt(
        self,
        *args: str,
        statements: list[str] | None = None,
        fail_at: str | None = None,
        log: list[str] | None = None,
    ) -> dbtRunnerResult:
        """Runs dbt in this process. `statements`, if given, receives the SQL
        of every statement dbt sends to Spark; `log`, every message dbt logs
        (a microbatch batch's error is there, its result says only ERROR);
        `fail_at` injects a failure at
        that step of the package's runs (through the environment: a change of
        --vars would make dbt parse the whole project again, 1-4 s)."""
        argv = [*args, "--project-dir", str(self.root), "--profiles-dir", str(self.root)]
        if "--vars" in args and "--target-path" not in args:
            # dbt keeps one parsed project per target folder and parses the whole project again (about
            # 1 s of CPU) whenever --vars differ from the last run's: runs alternating with and without
            # vars (a compaction between appends) each keep their own.
            vars_ = args[args.index("--vars") + 1]
            argv += ["--target-path", f"target-vars-{hashlib.sha256(vars_.encode()).hexdigest()[:12]}"]
        if "--threads" not in args and self.profile_overrides.get("method", "session") == "session":
            argv.append(SINGLE_THREADED)
        if args and args[0] in ("run", "test") and "--write-json" not in args:
            # The result object is what the tests read; writing manifest.json
            # and run_results.json costs about 0.4 s of every invocation.
            argv.append("--no-write-json")
        callbacks = []
        if statements is not None:
            callbacks.append(lambda e: statements.append(e.data.sql) if e.info.name == "SQLQuery" else None)
        if log is not None:
            callbacks.append(lambda e: log.append(e.info.msg))
        if fail_at is None:
            return dbtRunner(callbacks=callbacks).invoke(argv)
        os.environ[FAIL_AT] = fail_at
        try:
            return dbtRunner(callbacks=callbacks).invoke(argv)
        finally:
            del os.environ[FAIL_AT]

    def run(
        self,
        *select: str,
        expect_ok: bool = True,
        extra: tuple[str, ...] = (),
        fail_at: str | None = None,
        log: list[str] | None = None,
    ) -> dbtRunnerResult:
        args = ["run", *extra]
        if select:
            args += ["--select", *select]
        result = self.dbt(*args, fail_at=fail_at, log=log)
        if expect_ok:
            assert result.success, failure_text(result)
        return result


def failure_text(result: dbtRunnerResult) -> str:
    if result.exception is not None:
        return f"dbt raised: {result.exception}"
    messages = []
    for r in getattr(result.result, "results", None) or []:
        if str(r.status) not in ("success", "pass"):
            messages.append(f"{r.node.unique_id}: {r.status}: {r.message}")
    return "\n".join(messages) or "dbt failed without a message"


def node_messages(result: dbtRunnerResult) -> dict[str, str]:
    return {r.node.name: f"{r.status}: {r.message}" for r in result.result.results}


def with_vars(sql: str, **vars_) -> str:
    """A model's SQL whose `var(...)` calls read `vars_`, set in the model file
    itself. dbt then re-parses only that file (partial parsing), where a change
    of `--vars` makes it parse the whole project again (1-4 s a run)."""
    return (
        "{% set sb_vars = fromjson("
        + sql_string(json.dumps(vars_))
        + ") %}\n"
        + re.sub(r"\bvar\(", "sb_vars.get(", sql)
    )
