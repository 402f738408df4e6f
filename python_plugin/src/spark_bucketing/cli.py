"""The `spark-bucketing` command."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from spark_bucketing import hashing


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
    values = [_parse_value(v, t) for v, t in zip(args.values, args.types, strict=True)]
    print(hashing.bucket_id(values, args.types, args.buckets, args.hash))
    return 0


def cmd_files(args: argparse.Namespace) -> int:
    from spark_bucketing.files import files_per_bucket, local_path

    counts = files_per_bucket(local_path(args.location))
    for (directory, bucket), n in sorted(
        counts.items(), key=lambda kv: (kv[0][0], -1 if kv[0][1] is None else kv[0][1])
    ):
        flag = "" if n == 1 and bucket is not None else "   <-- " + ("no bucket id" if bucket is None else f"{n} files")
        print(f"{directory or '.'}\tbucket {bucket}\t{n} file(s){flag}")
    return 0 if all(n == 1 and b is not None for (_, b), n in counts.items()) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from spark_bucketing.demo import run_demo

    return run_demo(Path(args.project_dir), Path(args.state_dir))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="spark-bucketing", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("bucket-id", help="the bucket a row lands in")
    p.add_argument("values", nargs="+", help="bucket column values (NULL for null)")
    p.add_argument("--type", dest="types", action="append", required=True, help="Spark type of each value, in order")
    p.add_argument("--buckets", type=int, required=True)
    p.add_argument("--hash", choices=hashing.FAMILIES, default="hive")
    p.set_defaults(func=cmd_bucket_id)

    p = sub.add_parser("files", help="files per bucket under a table location; exit 1 unless one per bucket")
    p.add_argument("location")
    p.set_defaults(func=cmd_files)

    p = sub.add_parser("demo", help="build the demo pipeline and report its layout")
    p.add_argument("--project-dir", default=".")
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
