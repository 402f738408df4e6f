"""The `spark-bucketing` command."""

from __future__ import annotations

import argparse
import contextlib
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from spark_bucketing import hashing

if TYPE_CHECKING:  # the checker is imported by the command that uses it: `spark-bucketing` starts fast
    from spark_bucketing.checker.project import Report


def _parse_value(text: str, type_name: str):
    import datetime as dt

    if text.upper() == "NULL":
        return None
    t = hashing.normalize_type(type_name)
    if t in ("tinyint", "smallint", "int", "bigint"):
        return int(text)
    if t in ("float", "double"):
        return float(text)
    if t == "boolean":
        return text.lower() in ("true", "1")
    if t == "date":
        return dt.date.fromisoformat(text)
    return text


def cmd_bucket_id(args: argparse.Namespace) -> int:
    if len(args.values) != len(args.types):
        raise SystemExit(f"spark-bucketing: {len(args.values)} values but {len(args.types)} --type options")
    if args.bucketing_version == 2 and args.hash != "hive":
        raise SystemExit("spark-bucketing: --bucketing-version 2 is a version of Hive's hash: add --hash hive")
    values = [_parse_value(v, t) for v, t in zip(args.values, args.types, strict=True)]
    print(hashing.bucket_id(values, args.types, args.buckets, args.hash, args.bucketing_version))
    return 0


def cmd_files(args: argparse.Namespace) -> int:
    from spark_bucketing.files import files_per_bucket, local_path

    counts = files_per_bucket(local_path(args.location), args.hash)
    for (directory, bucket), n in sorted(
        counts.items(), key=lambda kv: (kv[0][0], -1 if kv[0][1] is None else kv[0][1])
    ):
        flag = "" if n == 1 and bucket is not None else "   <-- " + ("no bucket id" if bucket is None else f"{n} files")
        print(f"{directory or '.'}\tbucket {bucket}\t{n} file(s){flag}")
    return 0 if all(n == 1 and b is not None for (_, b), n in counts.items()) else 1


def _close(client) -> None:
    if hasattr(client, "close"):
        client.close()


def cmd_partitions(args: argparse.Namespace) -> int:
    import json

    from spark_bucketing.connection import TargetError, connect
    from spark_bucketing.metadata import read_table_metadata

    try:
        client = connect(args)
    except TargetError as exc:
        print(f"spark-bucketing partitions: {exc}", file=sys.stderr)
        return 2
    try:
        meta = read_table_metadata(client, args.table)
    finally:
        _close(client)
    if args.format == "json":
        print(
            json.dumps(
                {
                    "table": meta.table,
                    "declared": meta.declared and meta.declared.__dict__,
                    "latest": meta.latest and meta.latest.__dict__,
                    "partitions": [
                        {
                            "partition": p.path,
                            **p.spec.__dict__,
                            "files": p.files,
                            "rows": p.rows,
                            "location": p.location,
                            "written_at": p.written_at,
                        }
                        for p in meta.partitions
                    ],
                },
                indent=2,
                default=list,
            )
        )
        return 0
    print(f"{meta.table}")
    print(f"  catalog declares: {meta.declared.describe() if meta.declared else 'unbucketed'}")
    print(f"  latest write:     {meta.latest.describe() if meta.latest else 'no spark_bucketing metadata'}")
    if not meta.partitions:
        return 0
    specs = meta.distinct_specs
    print(
        f"  partitions:       {len(meta.partitions)}, written with {len(specs)} spec(s)"
        + ("" if len(specs) <= 1 else "  (* = differs from the latest write)")
    )
    width = max(len(p.path or "(table)") for p in meta.partitions)
    header = f"{'hash':5} {'buckets':>7}  {'clustered_by':20} {'sorted_by':20} {'files':>6} {'rows':>10}"
    print(f"\n  {'partition':{width}}  {header}")
    for p in meta.partitions:
        mark = "*" if meta.latest and p.spec.key() != meta.latest.key() else " "
        print(
            f"{mark} {p.path or '(table)':{width}}  {p.spec.hash:5} {p.spec.buckets:>7}  "
            f"{','.join(p.spec.clustered_by):20} {','.join(p.spec.sorted_by):20} {p.files:>6} {p.rows:>10}"
        )
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    import json

    from spark_bucketing.checker.engines import SPARK_VERSION, EngineSettings, spark_version
    from spark_bucketing.checker.project import CheckError, compile_project, format_text, run_check, target_path
    from spark_bucketing.connection import TargetError, connect

    conf = {}
    for item in args.conf or []:
        key, sep, value = item.partition("=")
        if not sep:
            raise SystemExit(f"spark-bucketing: --conf takes key=value, got {item!r}")
        conf[key.strip()] = value.strip()
    if args.extension:
        from spark_bucketing.extension import SWITCH

        conf[SWITCH] = "true"
    if args.spark_version:
        spark_version(args.spark_version)  # a clear error before dbt compiles anything
        conf[SPARK_VERSION] = args.spark_version
    project_dir = Path(args.project_dir)
    profiles_dir = Path(args.profiles_dir) if args.profiles_dir else None
    if not (project_dir / "dbt_project.yml").exists():
        print(
            f"spark-bucketing check: no dbt_project.yml in {project_dir.resolve()}: run it in a dbt project's folder,"
            " or pass --project-dir",
            file=sys.stderr,
        )
        return 2
    try:
        if not args.no_compile:
            # Before connecting: dbt's own invocation resets its adapters, connections included.
            own = args.catalog == "local"
            compile_project(project_dir, profiles_dir, args.select or [], args.target, args.target_path, own)
        manifest = target_path(project_dir, args.target_path) / "manifest.json"
        if not manifest.exists():  # before a Spark starts (--catalog live, --verify): it would be for nothing
            raise CheckError(f"no dbt manifest at {manifest}: run `dbt compile` there, or drop --no-compile")
        # --catalog local's verdicts are plans already: --verify adds nothing there, and no warehouse is read.
        client = connect(args) if args.catalog == "live" or (args.verify and args.catalog != "local") else None
    except (TargetError, CheckError) as exc:
        print(f"spark-bucketing check: {exc}", file=sys.stderr)
        return 2
    if client is None:
        conf = {**sessions_default(project_dir, profiles_dir, args.target), **conf}
    settings = EngineSettings(args.engine, conf)
    planner = contextlib.nullcontext()
    if args.catalog == "local":
        from spark_bucketing.checker.declared import local_planner

        planner = local_planner(extension=settings.extension)
    try:
        with planner as local:
            report = run_check(
                project_dir,
                select=args.select,
                settings=settings,
                catalog_mode=args.catalog,
                client=local or client,
                compile=False,
                verify_with=client if args.verify else None,
                target_dir=args.target_path,
            )
    except (CheckError, FileNotFoundError) as exc:
        print(f"spark-bucketing check: {exc}", file=sys.stderr)
        return 2
    finally:
        _close(client)
    print(json.dumps(report.to_json(), indent=2) if args.format == "json" else format_text(report))
    return gate(report, set(args.fail_on or []), args.allow_unchecked)


def sessions_default(project_dir: Path, profiles_dir: Path | None, target: str | None) -> dict[str, str]:
    """What an offline check takes the sessions that run the models to load, where --conf and --extension say
    nothing: the session extension where the target's sessions load it (its profile names it, or the package's
    dbt plugin adds it: method session, the package installed, SPARK_BUCKETING_EXTENSION not off)."""
    from spark_bucketing import session_extension
    from spark_bucketing.connection import TargetError, target_config
    from spark_bucketing.extension import EXTENSION_CLASS

    try:
        config = target_config(project_dir, profiles_dir, target)
    except TargetError:  # no profile to read: stock Spark's sessions, as before the plugin loaded it
        return {}
    if session_extension.loads(config.credentials, config):
        return {"spark.sql.extensions": EXTENSION_CLASS}
    return {}


def gate(report: Report, fail_on: set[str], allow_unchecked: bool) -> int:
    """The exit code of `check` (docs/checker.md, "The gate: --fail-on and exit codes"): 1 where a --fail-on
    condition holds, or where --fail-on is given and a selected model was not checked (unless
    --allow-unchecked): a gate that checked nothing must not pass. Says why on stderr."""
    failures = []
    if "shuffle" in fail_on:
        failures += [
            f"{m.unique_id} line {f.line}: a join between bucketed relations shuffles"
            for m, f in report.shuffling_bucketed_joins()
        ]
    if "unknown" in fail_on:
        failures += [f"{m.unique_id} line {f.line}: the verdict is unknown" for m, f in report.unknowns()]
    if fail_on and not allow_unchecked:
        failures += [f"{m.unique_id}: not checked: {why}" for m, why in report.unchecked()]
    for line in failures:
        print(f"spark-bucketing check: --fail-on {' '.join(sorted(fail_on))}: {line}", file=sys.stderr)
    return 1 if failures else 0


def cmd_log4j(args: argparse.Namespace) -> int:
    from spark_bucketing.sparksession import QUIET_LOG4J

    if args.quiet:
        print(QUIET_LOG4J)
        return 0
    print(f"log4j2 configuration (Spark's JVM logs errors only): {QUIET_LOG4J}")
    print("Add to the profile's server_side_parameters (method: session), or to the Thrift Server's driver options:")
    print(f'  spark.driver.extraJavaOptions: "-Dlog4j2.configurationFile={QUIET_LOG4J}"')
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from spark_bucketing.demo import run_demo

    return run_demo(Path(args.project_dir), Path(args.state_dir))


def cmd_extension(args: argparse.Namespace) -> int:
    from spark_bucketing import extension

    jar = extension.build_jar(Path(args.out) if args.out else None, force=args.force)
    if args.quiet:
        print(jar)
        return 0
    print(f"jar: {jar}")
    print(
        "A dbt command with method: session loads it by itself (the package's dbt plugin). Elsewhere add to the"
        " Spark's configuration (a Thrift Server's --conf, or a profile's server_side_parameters):"
    )
    for key, value in extension.spark_settings(jar).items():
        print(f"  {key}: {value}")
    print(f"Off for one session: SET {extension.SWITCH}=false")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark-bucketing", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("bucket-id", help="the bucket a row lands in")
    p.add_argument("values", nargs="+", help="bucket column values (NULL for null)")
    p.add_argument("--type", dest="types", action="append", required=True, help="Spark type of each value, in order")
    p.add_argument("--buckets", type=int, required=True)
    p.add_argument("--hash", choices=hashing.FAMILIES, default="hive")
    p.add_argument(
        "--bucketing-version", type=int, choices=(1, 2), default=1, help="Hive's bucketing version (--hash hive)"
    )
    p.set_defaults(func=cmd_bucket_id)

    p = sub.add_parser("files", help="files per bucket under a table location; exit 1 unless one per bucket")
    p.add_argument("location")
    p.add_argument(
        "--hash",
        choices=hashing.FAMILIES,
        default="spark",
        help="read the bucket ids as the table's readers do: spark (the last _N of a name) or hive (Hive's and "
        "Trino's leading 000003_0, _copy_N)",
    )
    p.set_defaults(func=cmd_files)

    p = sub.add_parser("partitions", help="a table's bucket spec per partition, as recorded by the materializations")
    p.add_argument("table", help="schema.table")
    p.add_argument("--project-dir", default=".", help="the dbt project whose target to read (the default Spark)")
    p.add_argument("--profiles-dir", help="for the dbt target (default: dbt's own lookup)")
    p.add_argument("--target", help="dbt target (default: the profile's)")
    p.add_argument("--thrift", metavar="HOST:PORT", help="instead: read through this Spark Thrift Server")
    p.add_argument("--state-dir", help="instead: open this local metastore and warehouse")
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.set_defaults(func=cmd_partitions)

    p = sub.add_parser("check", help="which joins and aggregations of the compiled models shuffle, and why")
    p.add_argument("--project-dir", default=".")
    p.add_argument("--profiles-dir", help="for dbt compile (default: dbt's own lookup)")
    p.add_argument("--target", help="dbt target for dbt compile, --catalog live and --verify")
    p.add_argument("--select", nargs="+", help="models by name, unique id or path (also passed to dbt compile)")
    p.add_argument("--engine", choices=["spark", "trino"], default="spark")
    p.add_argument("--conf", action="append", metavar="KEY=VALUE", help="a Spark session setting the model runs with")
    p.add_argument(
        "--extension",
        action="store_true",
        help="the models run with the session extension on (also read from --conf spark.sql.extensions=...)",
    )
    p.add_argument(
        "--spark-version",
        metavar="X.Y",
        help="the Spark the models run on, 3.5 to 4.3, where the planners differ (default: the live target's "
        "with --catalog live or --verify, else 4.3)",
    )
    p.add_argument(
        "--catalog",
        choices=["manifest", "live", "local"],
        default="manifest",
        help="manifest: the static model offline; live: the warehouse's tables and Spark's plans of each model; "
        "local: Spark's plans offline, over tables a local session declares from the manifest (needs PySpark)",
    )
    p.add_argument("--format", choices=["text", "json"], default="text")
    p.add_argument(
        "--fail-on",
        nargs="+",
        choices=["shuffle", "unknown"],
        help="exit 1 when a join between bucketed relations shuffles and/or when a verdict is unknown",
    )
    p.add_argument(
        "--verify", action="store_true", help="also check each verdict against Spark's physical plan (EXPLAIN)"
    )
    p.add_argument("--no-compile", action="store_true", help="reuse target/manifest.json instead of dbt compile")
    p.add_argument(
        "--allow-unchecked",
        action="store_true",
        help="with --fail-on: pass even where a selected model was not checked (no compiled code in the manifest,"
        " or a model Spark could not plan); by default the gate fails then",
    )
    p.add_argument(
        "--target-path",
        help="where dbt writes the manifest, as dbt's own --target-path (default: DBT_TARGET_PATH, else the "
        "project's target-path, else target)",
    )
    p.add_argument(
        "--thrift",
        metavar="HOST:PORT",
        help="Spark for --catalog live and --verify (default: the dbt target): a Thrift Server",
    )
    p.add_argument("--state-dir", help="... or this local metastore and warehouse")
    p.set_defaults(func=cmd_check)

    p = sub.add_parser("extension", help="build the Spark extension's jar; print the settings that enable it")
    p.add_argument("--out", help="the jar's path (default: under ~/.cache/spark-bucketing, by PySpark version)")
    p.add_argument("--force", action="store_true", help="rebuild even if the jar is there")
    p.add_argument("--quiet", action="store_true", help="print the jar's path only")
    p.set_defaults(func=cmd_extension)

    p = sub.add_parser("log4j", help="print the path of the quiet log4j2 configuration for Spark's JVM")
    p.add_argument("--quiet", action="store_true", help="print the path only")
    p.set_defaults(func=cmd_log4j)

    p = sub.add_parser("demo", help="build the demo pipeline and report its layout")
    p.add_argument("--project-dir", default="demo", help="the demo's dbt project (demo/ of this repository)")
    p.add_argument("--state-dir", default=".demo", help="where the local metastore and warehouse live")
    p.set_defaults(func=cmd_demo)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, hashing.UnsupportedTypeError) as exc:
        print(f"spark-bucketing: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
