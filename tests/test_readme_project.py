"""The README's "Using the package" section takes a newcomer to a working project (issue 82): its files and
commands, read from README.md (each file block is marked `<!-- readme-project: <path> -->`), build a new
project on an empty warehouse, with the package's defaults (Hive's hash, the session extension loaded by the
plugin; the package's end-of-run hook in the project file). The commands run one after another in one process
of their own (one JVM, Spark's default logging, as a user's `dbt` has), with the README's profile as it is:
`dbt deps`, `dbt compile` before anything is built, `dbt build`, `dbt test` and `spark-bucketing check`. Their
output holds no Java stack trace and no WARN past Spark's own start-up lines, which every Spark process prints
before a session's settings apply (stock dbt-spark's runs print them too)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from spark_bucketing import extension, session_extension

REPO_ROOT = Path(__file__).resolve().parents[1]
MARK = re.compile(r"<!-- readme-project: (?P<name>[^ ]+) -->\n```[a-z]*\n(?P<body>.*?)\n```", re.S)
# What Spark prints while it starts, before the profile's spark.log.level applies: the same in any Spark process.
SPARK_START_UP = ("WARN Utils: ", "WARN NativeCodeLoader: ")

DRIVER = """
import shlex, sys
from dbt.cli.main import dbtRunner
from spark_bucketing import cli

for line in sys.argv[1:]:
    argv = shlex.split(line)
    print(f"=== {line}", flush=True)
    code = (0 if dbtRunner().invoke(argv[1:]).success else 1) if argv[0] == "dbt" else cli.main(argv[1:])
    print(f"=== exit {code}", flush=True)
    if code:
        sys.exit(code)

# The session the dbt commands ran in: its extensions, and the Exchanges of customer_totals' join in its plan.
from pyspark.sql import SparkSession
from spark_bucketing.plans import executed_plan, exchanges

spark = SparkSession.builder.getOrCreate()
join = "select * from analytics.customers c join analytics.orders o on o.customer_id = c.customer_id"
print("=== extensions " + spark.conf.get("spark.sql.extensions", ""))
print(f"=== join exchanges {exchanges(executed_plan(spark, join, **{'spark.sql.autoBroadcastJoinThreshold': '-1'}))}")
"""


def readme_project() -> tuple[dict[str, str], list[str]]:
    """({file: text}, [command]) of the README's project, as the README writes them."""
    blocks = {m["name"]: m["body"] for m in MARK.finditer((REPO_ROOT / "README.md").read_text())}
    commands = [line.split("#", 1)[0].strip() for line in blocks.pop("commands").splitlines()]
    return blocks, [c for c in commands if c]


def test_the_readme_names_every_file_of_its_project():
    files, commands = readme_project()
    assert sorted(files) == sorted(
        [
            "packages.yml",
            "profiles.yml",
            "dbt_project.yml",
            "macros/is_incremental.sql",
            "models/customers.sql",
            "models/orders.sql",
            "models/customer_totals.sql",
            "models/schema.yml",
        ]
    )
    assert commands == ["dbt deps", "dbt compile", "dbt build", "dbt test", "spark-bucketing check"]


def test_the_readme_project_builds_on_an_empty_warehouse(tmp_path):
    files, commands = readme_project()
    project = tmp_path / "my_project"
    for name, text in files.items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text.replace("/path/to/spark-bucketing", str(REPO_ROOT)) + "\n")
    # A new user's environment: the session extension as the package's plugin loads it by default.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYSPARK", "SPARK_BUCKETING_FAIL"))}
    env.pop(session_extension.ENV, None)
    done = subprocess.run(
        [sys.executable, "-c", DRIVER, *commands],
        cwd=project,
        env=env | {"DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=900,
    )
    out = done.stdout
    assert done.returncode == 0, out[-6000:]
    assert [line.removeprefix("=== exit ") for line in out.splitlines() if line.startswith("=== exit")] == ["0"] * 5

    def section(command: str) -> str:
        return out.split(f"=== {command}\n", 1)[1].split("=== exit", 1)[0]

    # dbt compile before anything is built: the package's tests compile without their tables.
    assert "Runtime Error" not in section("dbt compile") and "Compilation Error" not in section("dbt compile")
    # Every node a result, and no more: the project has no hook (the plugin runs the package's end of run).
    assert re.search(r"Done\. PASS=8 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=8", section("dbt build")), section("dbt build")
    assert re.search(r"Done\. PASS=5 WARN=0 ERROR=0 SKIP=0 NO-OP=0 TOTAL=5", section("dbt test")), section("dbt test")
    # Default-config tables (Hive's hash): the extension loaded with no wiring, and their join needs no Exchange.
    assert f"=== extensions {extension.EXTENSION_CLASS}\n" in out, out[-3000:]
    assert "=== join exchanges 0\n" in out, out[-3000:]
    check = section("spark-bucketing check")
    assert re.search(r"model\.my_project\.customer_totals .*\n\s+line \d+\s+join\s+no shuffle", check), check
    # Quiet: no Java stack trace, no WARN but Spark's start-up lines, no PySpark query-error JSON.
    assert not re.search(r"^\s+at [\w.$]+\(", out, re.M), out
    warns = [line for line in out.splitlines() if " WARN " in line and not any(s in line for s in SPARK_START_UP)]
    assert warns == [], warns
    assert '"level": "ERROR"' not in out
