"""What the package's dbt plugin costs a dbt command now that it also sets up sessions (issue 90).

1. **Loading the session extension**: a project that installs the package, one stock `view` model, `dbt run`
   with the plugin loading the extension against `SPARK_BUCKETING_EXTENSION=off`: the seconds from the
   process start to the model's START line (Spark's start and the extension's classes) and the whole run.
2. **No harm to a project without the package**: a stock dbt-spark project (a seed, a view, a table, an
   incremental model, five tests), `dbt build` with the Python package installed against the same process
   with dbt shown no plugin (dbt imports every `dbt_*` module; the wrapper leaves `dbt_spark_bucketing`
   out, as an environment without the package has it).

Every build is a process of its own on a warehouse and metastore of its own, the sides alternated (A B, then
B A, ...), best of N (--runs, default 2 for 1 and 4 for 2). The extension's jar is built before the first
timed run (once per PySpark version on a user's machine, not per command).

    .venv/bin/python benchmarks/bench_session_start.py [--runs-start 2] [--runs-harm 4]
"""

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
sys.path.insert(0, str(REPO_ROOT))

from spark_bucketing import extension, session_extension  # noqa: E402

# dbt in this process with or without the package's plugin among the modules dbt loads.
RUNNER = """
import sys
import dbt.plugins.manager as manager
from dbt.cli.main import dbtRunner

if sys.argv[1] == "without-plugin":
    found = manager.PluginManager.get_prefixed_modules()
    without = {k: v for k, v in found.items() if k != "dbt_spark_bucketing"}
    manager.PluginManager.get_prefixed_modules = classmethod(lambda cls: without)
sys.exit(0 if dbtRunner().invoke(sys.argv[2:]).success else 1)
"""

STOCK_MODELS = {
    "models/v.sql": "{{ config(materialized='view') }}\nselect * from {{ ref('seed_rows') }}",
    "models/t.sql": "{{ config(materialized='table', file_format='parquet') }}\nselect id, name from {{ ref('v') }}",
    "models/inc.sql": (
        "{{ config(materialized='incremental', file_format='parquet', incremental_strategy='append') }}\n"
        "select id, name from {{ ref('t') }}"
    ),
    "models/schema.yml": (
        "version: 2\nmodels:\n"
        "  - name: t\n    columns:\n      - name: id\n        data_tests: [unique, not_null]\n"
        "      - name: name\n        data_tests: [not_null]\n"
        "  - name: inc\n    columns:\n      - name: id\n        data_tests: [not_null, unique]\n"
    ),
    "seeds/seed_rows.csv": "id,name\n" + "".join(f"{i},n{i}\n" for i in range(100)),
}


def project(root: Path, with_package: bool, files: dict[str, str]) -> Path:
    if root.exists():
        shutil.rmtree(root)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text.rstrip("\n") + "\n")
    (root / "dbt_project.yml").write_text("name: p\nversion: '1.0'\nconfig-version: 2\nprofile: p\n")
    state = root / "state"
    metastore = f"jdbc:derby:;databaseName={state}/metastore_db;create=true"
    (root / "profiles.yml").write_text(
        "p:\n  target: dev\n  outputs:\n    dev:\n      type: spark\n      method: session\n      host: localhost\n"
        "      schema: bench\n      server_side_parameters:\n"
        f'        spark.sql.warehouse.dir: "{state}/warehouse"\n'
        f'        spark.hadoop.javax.jdo.option.ConnectionURL: "{metastore}"\n'
        f'        spark.driver.extraJavaOptions: "-Dderby.system.home={state}"\n'
        "        spark.ui.enabled: 'false'\n        spark.log.level: ERROR\n"
    )
    if with_package:
        (root / "packages.yml").write_text(f"packages:\n  - local: {REPO_ROOT}\n")
        subprocess.run([str(Path(sys.executable).with_name("dbt")), "deps", "--quiet"], cwd=root, check=True)
    return root


def timed(root: Path, mode: str, env: dict[str, str], *args: str) -> tuple[float, float]:
    """(seconds to the first model's START line, seconds of the whole command), the state reset first."""
    shutil.rmtree(root / "state", ignore_errors=True)
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-c", RUNNER, mode, *args],
        cwd=root,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false", "DBT_PROFILES_DIR": str(root), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    first = None
    out = []
    for line in proc.stdout:
        out.append(line)
        if first is None and re.search(r"\b1 of \d+ START\b", line):
            first = time.perf_counter() - start
    proc.wait()
    total = time.perf_counter() - start
    if proc.returncode != 0 or first is None:
        raise SystemExit(f"dbt {' '.join(args)} failed ({mode}, {env}):\n{''.join(out)[-4000:]}")
    return first, total


def alternated(sides: dict[str, tuple], runs: int) -> dict[str, tuple[float, float]]:
    """Each side `runs` times, the order alternating; the best start and the best whole run of each."""
    names = list(sides)
    seen: dict[str, list[tuple[float, float]]] = {n: [] for n in names}
    for i in range(runs):
        for name in names if i % 2 == 0 else reversed(names):
            seen[name].append(timed(*sides[name]))
            print(f"  {name}: to first model {seen[name][-1][0]:.1f} s, whole {seen[name][-1][1]:.1f} s", flush=True)
    return {n: (min(r[0] for r in v), min(r[1] for r in v)) for n, v in seen.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs-start", type=int, default=2)
    parser.add_argument("--runs-harm", type=int, default=4)
    args = parser.parse_args()
    extension.build_jar()
    base = Path(tempfile.mkdtemp(prefix="sb-bench-start-"))
    cache = {"SPARK_BUCKETING_MACRO_CACHE": str(base / "macros")}
    try:
        print("1. Loading the session extension (a project with the package, one stock view, dbt run)")
        root = project(base / "with-package", True, {"models/v.sql": "select 1 as id"})
        best = alternated(
            {
                "extension loaded (default)": (root, "with-plugin", {**cache, session_extension.ENV: "on"}, "run"),
                "SPARK_BUCKETING_EXTENSION=off": (root, "with-plugin", {**cache, session_extension.ENV: "off"}, "run"),
            },
            args.runs_start,
        )
        for name, (first, total) in best.items():
            print(f"  best {name:<32} to first model {first:5.1f} s   whole run {total:5.1f} s")

        print("\n2. A project without the package (seed, view, table, incremental, 5 tests; dbt build)")
        root = project(base / "stock", False, STOCK_MODELS)
        best = alternated(
            {
                "plugin installed": (root, "with-plugin", cache, "build"),
                "no plugin": (root, "without-plugin", cache, "build"),
            },
            args.runs_harm,
        )
        for name, (first, total) in best.items():
            print(f"  best {name:<32} to first model {first:5.1f} s   whole build {total:5.1f} s")
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
