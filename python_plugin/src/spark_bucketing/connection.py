"""The Spark a command talks to. By default the user's own dbt target (the
profile and target `dbt compile` uses, through dbt's adapter connection), so
the catalog read is the one the models are built in; `--thrift` and
`--state-dir` override it."""

from __future__ import annotations

import os
from argparse import Namespace
from pathlib import Path


class TargetError(RuntimeError):
    """The dbt target could not be opened; the message says what to change."""


class DbtTargetClient:
    """Runs SQL through dbt's connection to the project's target (any method
    dbt-spark supports). `spark` is the SparkSession when the target runs one
    in this process (`method: session`), else None."""

    def __init__(self, project_dir: Path, profiles_dir: Path | None = None, target: str | None = None):
        from dbt.adapters.factory import get_adapter, register_adapter
        from dbt.mp_context import get_mp_context

        from spark_bucketing import session_extension

        config = target_config(project_dir, profiles_dir, target)
        if config.credentials.type != "spark":
            raise TargetError(f"the dbt target '{config.target_name}' is of type {config.credentials.type}, not spark")
        # The session a dbt command of this project starts: the extension loaded as the package's dbt plugin loads it.
        session_extension.load_into(config.credentials, config)
        register_adapter(config, get_mp_context())
        self.adapter = get_adapter(config)
        self.target = f"{config.profile_name}.{config.target_name} (method {config.credentials.method})"
        self._conn = self.adapter.connection_named("spark_bucketing")
        self._conn.__enter__()
        try:
            self.query("select 1")  # opens the connection now, so a wrong target fails here
        except Exception as exc:
            raise TargetError(f"cannot reach the dbt target {self.target}: {exc}") from exc
        self.spark = _session() if str(config.credentials.method) == "session" else None

    def query(self, sql: str) -> list[tuple]:
        _, table = self.adapter.execute(sql, fetch=True)
        return [tuple(row) for row in table.rows]

    def close(self) -> None:
        self._conn.__exit__(None, None, None)


def target_config(project_dir: Path, profiles_dir: Path | None = None, target: str | None = None):
    """dbt's RuntimeConfig of the project's target: its profile, as `dbt compile` there reads it."""
    project_dir = Path(project_dir).resolve()
    if not (project_dir / "dbt_project.yml").exists():
        raise TargetError(
            f"no dbt_project.yml in {project_dir}: pass --project-dir, or --thrift HOST:PORT / --state-dir DIR"
        )
    try:
        from dbt.cli.resolvers import default_profiles_dir
        from dbt.config.runtime import RuntimeConfig
        from dbt.flags import set_from_args
    except ImportError as exc:  # pragma: no cover - dbt-core is a declared dependency
        raise TargetError(f"dbt-core is not importable ({exc}); install dbt-spark in this environment") from exc
    profiles = profiles_dir or Path(os.environ.get("DBT_PROFILES_DIR") or default_profiles_dir())
    args = Namespace(
        project_dir=str(project_dir),
        profiles_dir=str(Path(profiles).resolve()),
        target=target,
        profile=None,
        threads=None,
        vars={},
    )
    try:
        set_from_args(args, {})
        return RuntimeConfig.from_args(args)
    except Exception as exc:
        raise TargetError(
            f"cannot load the dbt profile for {project_dir} from {profiles} (pass --profiles-dir, "
            f"or --thrift HOST:PORT / --state-dir DIR): {exc}"
        ) from exc


def _session():
    # dbt-spark's session cursor made it with the target's server_side_parameters.
    from pyspark.sql import SparkSession

    return SparkSession.getActiveSession() or SparkSession.builder.getOrCreate()


def connect(args: Namespace):
    """The client for `args`: --thrift, else --state-dir, else the dbt target."""
    from spark_bucketing.metadata import SparkClient, ThriftClient

    if getattr(args, "thrift", None):
        host, _, port = args.thrift.rpartition(":")
        if not port.isdigit():
            raise TargetError(f"--thrift takes HOST:PORT, got {args.thrift!r}")
        try:
            return ThriftClient(host or "127.0.0.1", int(port))
        except Exception as exc:  # PyHive and thrift raise several kinds
            raise TargetError(f"cannot reach the Spark Thrift Server at {host or '127.0.0.1'}:{port}: {exc}") from exc
    if getattr(args, "state_dir", None):
        return SparkClient.local(args.state_dir)
    return DbtTargetClient(
        Path(getattr(args, "project_dir", None) or "."),
        Path(args.profiles_dir) if getattr(args, "profiles_dir", None) else None,
        getattr(args, "target", None),
    )
