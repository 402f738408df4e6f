"""Speed of the static bucket-join check on a generated dbt project.

    .venv/bin/python benchmarks/bench_checker.py [--models 240]

Generates a project of bucketed tables and query models (joins through CTEs,
subqueries, aggregates, windows, unions), runs `dbt compile` once (not timed),
then times `spark-bucketing check` on the compiled manifest (manifest catalog,
no Spark). Target: >= 50 models per second.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO_ROOT))

from harness.dbt_project import DbtProject, failure_text  # noqa: E402
from harness.spark import make_session  # noqa: E402
from spark_bucketing.checker.engines import EngineSettings  # noqa: E402
from spark_bucketing.checker.project import run_check  # noqa: E402

TEMPLATES = [
    "select a.k, a.v, b.w from {{{{ ref('{a}') }}}} a join {{{{ ref('{b}') }}}} b on a.k = b.k",
    "with x as (select k, v from {{{{ ref('{a}') }}}} where v is not null), "
    "y as (select k as key, count(*) as n from {{{{ ref('{b}') }}}} group by k) "
    "select x.k, y.n from x left join y on x.k = y.key",
    "select k, count(*) as n, max(v) as v from {{{{ ref('{a}') }}}} group by k",
    "select * from (select k, v from {{{{ ref('{a}') }}}} union all select k, w as v from {{{{ ref('{b}') }}}}) u "
    "join {{{{ ref('{c}') }}}} c on u.k = c.k",
    "select k, v, row_number() over (partition by k order by v) as rn from {{{{ ref('{a}') }}}}",
    "with s as (select cast(k as bigint) as k, v from {{{{ ref('{a}') }}}}) "
    "select s.v, b.w, c.w as w2 from s join {{{{ ref('{b}') }}}} b on s.k = b.k "
    "join {{{{ ref('{c}') }}}} c on b.k = c.k",
    "select distinct a.k from {{{{ ref('{a}') }}}} a join {{{{ ref('{b}') }}}} b using (k)",
]


def generate(project: DbtProject, models: int, rng: random.Random) -> None:
    tables = []
    for i in range(20):
        name = f"t{i:02d}"
        buckets = rng.choice([8, 16, 32])
        family = rng.choice(["spark", "spark", "hive"])
        project.write_model(
            name,
            "select cast(id as int) as k, concat('v', id) as v, concat('w', id) as w from range(0, 10)",
            {"materialized": "bucketed_table", "clustered_by": "k", "buckets": buckets, "bucket_hash": family},
        )
        tables.append(name)
    for i in range(models - len(tables)):
        a, b, c = rng.sample(tables, 3)
        sql = rng.choice(TEMPLATES).format(a=a, b=b, c=c)
        (project.root / "models" / f"q{i:03d}.sql").write_text("{{ config(materialized='view') }}\n" + sql + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", type=int, default=240)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    base = Path(tempfile.mkdtemp(prefix="sb-bench-check-"))
    spark = make_session(base)
    project = DbtProject(base / "project", schema="bench_check", package_dir=REPO_ROOT)
    project.setup()
    generate(project, args.models, random.Random(7))
    started = time.perf_counter()
    compiled = project.dbt("compile", "--quiet")
    assert compiled.success, failure_text(compiled)
    compile_s = time.perf_counter() - started

    times = []
    for _ in range(args.repeat):
        report = run_check(project.root, settings=EngineSettings("spark"), compile=False)
        times.append(report.seconds)
    median = statistics.median(times)
    findings = sum(len(m.findings) for m in report.models)
    print(f"\n{len(report.models)} models, {findings} findings; dbt compile took {compile_s:.1f} s (not counted)")
    print(
        f"static check: median {median:.3f} s over {args.repeat} runs = {len(report.models) / median:.0f} models/s "
        f"(target >= 50 models/s)"
    )
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
