"""The session extension loaded into the Spark that dbt starts in its own process (`method: session`), for
projects that install the package's dbt package.

Without the extension, Spark reads a `bucket_hash='hive'` table (the package's default) unbucketed, so its
joins and aggregations on the bucket key shuffle, and an incremental run that replaces a partition leaves that
partition without its bucket spec in the metastore, which makes Trino refuse the whole table. The plugin adds
the extension's jar and class to the session settings of the profile's target (`server_side_parameters`)
before dbt-spark starts Spark, merged with the user's own: a user's `spark.sql.extensions`, `spark.jars` and
`spark.driver.extraClassPath` keep their values, with the extension's appended; a profile that already names
the extension's class is left as it is. The jar is compiled once per PySpark version and source change
(spark_bucketing.extension.build_jar), saying so while it compiles.

Nothing is added where `SPARK_BUCKETING_EXTENSION=off`, where the target is not `method: session` (a Thrift
Server loads what its own configuration names), where the project does not install the dbt package (a
dbt-spark project without it gets stock's session), or where this process already runs a Spark (a session's
static settings cannot change; dbt-spark then uses that session as it is)."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from dbt_common.events.base_types import EventLevel
from dbt_common.events.functions import fire_event
from dbt_common.events.types import Note

from spark_bucketing import extension

ENV = "SPARK_BUCKETING_EXTENSION"
OFF = "off"
PACKAGE = "spark_bucketing"
# What a table loses where the extension is not loaded: said where it cannot be loaded.
WITHOUT_IT = (
    "Without it, Spark reads bucket_hash='hive' tables unbucketed (their joins and aggregations on the bucket "
    "key shuffle), each partition an incremental run replaces costs one more statement (LOAD DATA, about a "
    "second) to keep its bucket spec for Trino and Hive, and bucketing_version=2 models cannot run"
)
# The settings joined with the user's value rather than replaced, and the separator of each.
LISTS = {"spark.sql.extensions": ",", "spark.jars": ",", "spark.driver.extraClassPath": os.pathsep}


def _say(message: str, level: EventLevel = EventLevel.INFO) -> None:
    fire_event(Note(msg=f"spark-bucketing: {message}"), level=level)


def uses_package(project: Any) -> bool:
    """Whether `project` (dbt's Project) has the package installed (`dbt deps` puts it in the packages folder
    under its project name)."""
    installed = Path(project.project_root) / project.packages_install_path / PACKAGE / "dbt_project.yml"
    return installed.is_file()


def spark_running() -> bool:
    """Whether this process already runs a Spark (whose static settings a builder cannot change)."""
    pyspark = sys.modules.get("pyspark")
    return pyspark is not None and getattr(pyspark.SparkContext, "_active_spark_context", None) is not None


def merged(current: dict[str, str], jar: Path) -> dict[str, str]:
    """`current` with the extension's settings added: list settings joined, the user's values first."""
    out = dict(current)
    for key, value in extension.spark_settings(jar).items():
        sep = LISTS.get(key)
        mine = out.get(key, "").strip()
        out[key] = f"{mine}{sep}{value}" if sep and mine else value
    return out


def named(current: dict[str, str]) -> bool:
    """Whether the user's settings name the extension's class already."""
    return extension.EXTENSION_CLASS in [c.strip() for c in current.get("spark.sql.extensions", "").split(",")]


def jar_or_none() -> Path | None:
    """The extension's jar, compiled first where it is not there yet; None, said with its cost, where it
    cannot be had (a PySpark the extension is not built for, a failed compile)."""
    try:
        jar = extension.default_jar()
        if not jar.is_file():
            _say(
                f"compiling the Spark session extension for PySpark {extension.pyspark_version()} into {jar} "
                "(once per PySpark version and package upgrade, about 30 s)"
            )
            jar = extension.build_jar(jar)
        return jar
    except (ValueError, OSError) as e:
        _say(
            f"the Spark session extension is not loaded: {e}\n{WITHOUT_IT}. To build it by hand: "
            f"`spark-bucketing extension` (it prints the jar and the settings that load it); {ENV}={OFF} runs "
            "without it on purpose and leaves this message out",
            EventLevel.WARN,
        )
        return None


def switched_off() -> bool:
    return os.environ.get(ENV, "").strip().lower() == OFF


def wanted(credentials: Any, project: Any) -> bool:
    """Whether the plugin loads the extension into the Spark of this target and project (not switched off,
    `method: session`, the dbt package installed)."""
    if switched_off():
        return False
    if getattr(credentials, "type", None) != "spark" or str(getattr(credentials, "method", "")) != "session":
        return False
    return uses_package(project)


def loads(credentials: Any, project: Any) -> bool:
    """Whether a session of this target loads the extension: its settings name it, or the plugin adds it."""
    return named(getattr(credentials, "server_side_parameters", None) or {}) or wanted(credentials, project)


def load_into(credentials: Any, project: Any) -> bool:
    """Adds the extension to the settings of the session dbt-spark will start for `credentials`, where it
    should be loaded (module docstring); whether it added it."""
    if not wanted(credentials, project) or spark_running():
        return False
    current = credentials.server_side_parameters
    if named(current):
        return False
    jar = jar_or_none()
    if jar is None:
        return False
    credentials.server_side_parameters = merged(current, jar)
    return True


def install() -> None:
    """At the start of a dbt command: loads the extension into the session the command's target starts.
    The project and profile are the command's own (dbt keeps them in its click context before it sets up
    the plugins); a command without them (dbt init, dbt --version) is left alone."""
    import click

    ctx = click.get_current_context(silent=True)
    obj = ctx.obj if ctx is not None and isinstance(ctx.obj, dict) else {}
    project, profile = obj.get("project"), obj.get("profile")
    if project is None or profile is None:
        return
    load_into(profile.credentials, project)
