"""Where a dbt run's time goes, statement by statement, on dbt-spark's
`method: session`.

dbt's log times a statement from `spark.sql()` to its return: the whole of
a command (CREATE, INSERT, ALTER, SHOW), but only the analysis of a query
(SELECT, DESCRIBE QUERY), which Spark runs when dbt fetches its rows, after
the log line. This runs one dbt command in this process with dbt-spark's
session cursor timed around both calls, and prints each statement's
`execute` (analysis, or a command's whole run) and `fetch` (a query's run),
and the model's span from its first statement to dbt's return, with the
CPU time this Python process spent in that span (dbt, Jinja, building result
tables; Spark runs in its own JVM process, so its work is not counted): a
figure that the machine's load moves far less than the span. Then, per
package, the time the model's macros took to compile at their first call:
dbt keeps a compiled macro for its process only, so every `dbt run` pays it
again, however warm the Spark it talks to (with SPARK_BUCKETING_MACRO_CACHE
set, the time to load them from that cache, or to compile and write them
there; spark_bucketing.macro_cache).

    cd <a dbt project whose profile uses method: session>
    /work/main/.venv/bin/python /work/main/benchmarks/statement_times.py run --select my_model [--vars ...]

The arguments are dbt's. One process, one JVM: run it once per side and
compare like with like (a fresh JVM pays each kind of work's first time).
"""

from __future__ import annotations

import sys
import time

from dbt.adapters.spark import session
from dbt.cli.main import dbtRunner
from dbt.task.run import ModelRunner
from dbt_common.clients import jinja

# Statements dbt sends for the whole project, not for a model.
PROJECT_STATEMENTS = ("show databases", "show table extended")


def main() -> int:
    timed: list[list] = []  # [execute s, fetch s, statement, start]
    execute, fetchall = session.Cursor.execute, session.Cursor.fetchall

    def timed_execute(cursor, sql, *args):
        start, cpu = time.perf_counter(), time.process_time()
        result = execute(cursor, sql, *args)
        body = " ".join(sql.split("*/", 1)[-1].split())
        timed.append([time.perf_counter() - start, 0.0, body[:100], start, cpu])
        return result

    def timed_fetchall(cursor):
        start = time.perf_counter()
        rows = fetchall(cursor)
        if timed:
            timed[-1][1] += time.perf_counter() - start
        return rows

    compiled: list[tuple[float, str, int]] = []  # [seconds, package, characters], while a model runs
    model_execute = ModelRunner.execute

    def timed_model_execute(runner, *args):
        # Wrapped here, not before dbt starts: the package's dbt plugin (spark_bucketing.macro_cache) may
        # replace TemplateCache.get_node_template when dbt sets up its plugins.
        get_node_template = jinja.TemplateCache.get_node_template

        def timed_get_node_template(cache, macro):
            if macro.macro_sql in cache.file_cache:
                return get_node_template(cache, macro)
            start = time.perf_counter()
            template = get_node_template(cache, macro)
            compiled.append((time.perf_counter() - start, macro.package_name, len(macro.macro_sql)))
            return template

        jinja.TemplateCache.get_node_template = timed_get_node_template
        try:
            return model_execute(runner, *args)
        finally:
            jinja.TemplateCache.get_node_template = get_node_template

    session.Cursor.execute, session.Cursor.fetchall = timed_execute, timed_fetchall
    ModelRunner.execute = timed_model_execute
    result = dbtRunner().invoke(sys.argv[1:])
    end, cpu_end = time.perf_counter(), time.process_time()
    model = [t for t in timed if not t[2].startswith(PROJECT_STATEMENTS)]
    print(f"{'execute s':>9} {'fetch s':>8}  statement")
    for run, fetch, text, *_ in model:
        print(f"{run:9.3f} {fetch:8.3f}  {text}")
    if model:
        run, fetch = sum(t[0] for t in model), sum(t[1] for t in model)
        span = end - model[0][3]
        print(
            f"{run:9.3f} {fetch:8.3f}  {len(model)} statements; the model's span {span:.2f} s, "
            f"of which {span - run - fetch:.2f} s in dbt and Jinja; this process's CPU in the span"
            f" {cpu_end - model[0][4]:.2f} s (Python: dbt, Jinja, result tables; Spark's JVM is another process)"
        )
    packages = sorted({package for _, package, _ in compiled})
    for package in packages:
        mine = [(s, n) for s, p, n in compiled if p == package]
        print(
            f"{sum(s for s, _ in mine):9.3f} {'':8}  Jinja compiling {len(mine)} macros of {package}"
            f" ({sum(n for _, n in mine) / 1000:.0f} KB of source), or loading them from the macro cache:"
            " each one's first call in this process, from the model's start"
        )
    return 0 if result.success else 1


if __name__ == "__main__":
    sys.exit(main())
