"""The package's end of a dbt command, without a hook in the user's project (issue 90): after the models of a
`dbt run` / `build` / `seed` / `snapshot` ran, the package's `end_of_run` macro gets their results as an
on-run-end hook would (macros/materializations/hooks.sql): a model that failed while it held its table's commit
lock releases it and its side entries, and a Hive-hash table written without the session extension is said
once. dbt runs an installed package's own on-run-end hooks too, but reports each as one more result of every
command (dbt's own adapter tests count them), so the plugin calls the macro instead, in dbt's end-of-run
connection, before the project's own hooks. A project whose hooks call the package's end of run already (the
README's step before this) is left to them: nothing is released or said twice. A project without the package
runs as with stock dbt."""

from __future__ import annotations

import sys
from typing import Any

from dbt.task.run import RunTask
from dbt_common.events.functions import fire_event
from dbt_common.events.types import Note

from spark_bucketing import session_extension
from spark_bucketing.extension import SWITCH

PACKAGE = "spark_bucketing"
MACRO = "end_of_run"
# The macros a project's own hook may call for the same end: the current one, and the one the README asked for first.
HOOK_CALLS = (f"{PACKAGE}.{MACRO}", f"{PACKAGE}.release_failed_runs_locks")


def install() -> None:
    """Runs the package's end of run after the nodes of every run-like task; once per process."""
    current = RunTask.after_run
    if getattr(current, "spark_bucketing", False):
        return

    def after_run(self: RunTask, adapter: Any, results: list) -> None:
        run_package_end(self.manifest, adapter, results)
        current(self, adapter, results)

    after_run.spark_bucketing = True  # type: ignore[attr-defined]
    after_run.__wrapped__ = current  # type: ignore[attr-defined]
    RunTask.after_run = after_run  # type: ignore[method-assign]


def uninstall() -> None:
    """dbt's own end of run again (a process that runs dbt without the package's plugin)."""
    current = RunTask.after_run
    if getattr(current, "spark_bucketing", False):
        RunTask.after_run = current.__wrapped__  # type: ignore[method-assign]


def hooks_call_it(manifest: Any) -> bool:
    """Whether one of the project's on-run-end hooks calls the package's end of run itself."""
    return any(
        node.resource_type == "operation" and any(call in (node.raw_code or "") for call in HOOK_CALLS)
        for node in manifest.nodes.values()
    )


def routes_incremental(manifest: Any) -> bool:
    """Whether the project routes dbt-spark's `incremental` to the package (its own `incremental` materialization
    calls the package's, as the README's routing does): only then is an `incremental` model with buckets the
    package's."""
    return any(
        macro.name.startswith("materialization_incremental_")
        and macro.package_name != PACKAGE
        and f"{PACKAGE}.incremental_materialization" in (macro.macro_sql or "")
        for macro in manifest.macros.values()
    )


def session_extension_state(adapter: Any) -> bool | None:
    """Whether the Spark of a `method: session` target runs the session extension, switched on, read from the
    session in this process (no statement); None for a server, which the macro asks."""
    pyspark_sql = sys.modules.get("pyspark.sql")
    if getattr(adapter.config.credentials, "method", None) != "session" or pyspark_sql is None:
        return None
    spark = pyspark_sql.SparkSession._instantiatedSession
    if spark is None:
        return None
    loaded = session_extension.named({"spark.sql.extensions": spark.conf.get("spark.sql.extensions", "") or ""})
    return loaded and (spark.conf.get(SWITCH, "true") or "true").strip().lower() != "false"


def run_package_end(manifest: Any, adapter: Any, results: list) -> None:
    """The package's end_of_run over `results`, where the project installs the package and no hook of its calls
    it. A failure of its own never fails the command: it is said, and the locks expire as they would."""
    if manifest is None or f"macro.{PACKAGE}.{MACRO}" not in manifest.macros or hooks_call_it(manifest):
        return
    kwargs = {"results": results, "extension": session_extension_state(adapter), "routed": routes_incremental(manifest)}
    try:
        with adapter.connection_named("master"):
            adapter.execute_macro(MACRO, macro_resolver=manifest, project=PACKAGE, kwargs=kwargs)
    except Exception as e:  # noqa: BLE001 - the end of a command that ran: never its failure
        fire_event(
            Note(
                msg=f"spark_bucketing: the package's end of run failed ({e}); failed runs' commit locks "
                "expire after commit_lock_expiry"
            )
        )
