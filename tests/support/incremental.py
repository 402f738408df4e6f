"""A bucketed_incremental model driven by dbt vars, and an independent model
of what the table must hold after each run."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from harness.dbt_project import DbtProject, failure_text, node_messages, with_vars
from spark_bucketing import contracts, hashing
from spark_bucketing.files import bucket_of, local_path
from spark_bucketing.metadata import SparkClient, read_table_metadata

MODEL_SQL = """
{{ config(
    materialized='bucketed_incremental',
    clustered_by=var('clustered_by', 'k'),
    buckets=var('buckets', 8),
    bucket_hash=var('bucket_hash', 'hive'),
    bucketing_version=var('bucketing_version', 1),
    partition_by=var('partition_by', ['day']),
    sorted_by=['id'],
    incremental_strategy=var('strategy', 'insert_overwrite'),
    on_bucket_change=var('on_change', 'fail'),
    partitions=var('partitions', none),
    verify_layout=var('verify_layout', true),
    bucket_records=var('bucket_records', 'table_properties'),
    on_schema_change=var('on_schema_change', 'ignore'),
) }}
select cast(pmod(hash(id, {{ var('tag', 0) }}), {{ var('keys', 300) }}) as int) as k,
       concat('v{{ var("tag", 0) }}-', id) as payload,
       id,
       {#- Extra columns named c<n>, holding id + n. -#}
       {% for c in var('extra', []) %}id + {{ c[1:] }} as {{ c }}, {% endfor %}
       date_add(date'2024-01-01', d) as day
from range(0, {{ var('rows', 200) }}, 1, 6)
cross join (select explode(array({{ var('days', [0]) | join(', ') }})) as d)
{% if var('fail', false) %}where raise_error('model failed on purpose') is null{% endif %}
"""


@dataclass
class Expected:
    """day offset -> Counter of (k, payload, id)."""

    days: dict = field(default_factory=lambda: defaultdict(Counter))

    def apply(self, spark: SparkSession, vars_: dict) -> None:
        rows = spark.sql(
            f"select cast(pmod(hash(id, {vars_.get('tag', 0)}), {vars_.get('keys', 300)}) as int) as k, "
            f"concat('v{vars_.get('tag', 0)}-', id) as payload, id, d "
            f"from range(0, {vars_.get('rows', 200)}) "
            f"cross join (select explode(array({', '.join(map(str, vars_['days']))})) as d)"
        ).collect()
        new = defaultdict(Counter)
        for r in rows:
            new[r.d][(r.k, r.payload, r.id)] += 1
        if vars_.get("strategy", "insert_overwrite") == "append":
            for d, c in new.items():
                self.days[d].update(c)
        else:
            if vars_.get("partition_by") == []:  # unpartitioned: the new rows replace the table
                self.days.clear()
            for d in vars_["days"]:
                self.days[d] = new[d]
            for p in vars_.get("partitions") or []:
                offset = (_date(p) - _date("2024-01-01")).days
                self.days[offset] = new.get(offset, Counter())

    def copy(self) -> Expected:
        out = Expected()
        for d, c in self.days.items():
            out.days[d] = Counter(c)
        return out

    def nonempty(self) -> dict:
        return {d: c for d, c in self.days.items() if c}

    def rows(self) -> Counter:
        out = Counter()
        for c in self.days.values():
            out.update(c)
        return out


def _date(s):
    import datetime as dt

    return dt.date.fromisoformat(s)


def model_sql(vars_: dict) -> str:
    """MODEL_SQL with the run's vars set in the model file itself."""
    return with_vars(MODEL_SQL, **vars_)


def run_model(project: DbtProject, name: str, vars_: dict, expect_ok: bool = True, fail_at: str | None = None):
    """Runs the model with `vars_`; `fail_at` injects a failure at that step."""
    (project.root / "models" / f"{name}.sql").write_text(model_sql(vars_))
    return project.run(name, expect_ok=expect_ok, fail_at=fail_at)


def run_statements(project: DbtProject, name: str, vars_: dict) -> list[str]:
    """Runs the model once; returns the SQL statements the run sent to Spark."""
    (project.root / "models" / f"{name}.sql").write_text(model_sql(vars_))
    statements: list[str] = []
    result = project.dbt("run", "--select", name, statements=statements)
    assert result.success, failure_text(result)
    return statements


def statement_body(statement: str) -> str:
    """A statement dbt sent, without the comment dbt puts before it."""
    return statement.split("*/", 1)[-1].strip()


def statement_payload(statement: str) -> dict:
    """The JSON payload of an extension statement that takes one (`.. locations '<json>'`)."""
    return json.loads(re.sub(r"\\(.)", r"\1", re.search(r"locations '(.*)'$", statement, re.S).group(1)))


def commit_end(statements: list[str]) -> tuple[str, dict]:
    """The statement that ended a run's commit through the extension, among
    the run's statements, and the end's payload: the switch's "end" where the
    switch ended the commit itself (the replaced partitions were in the
    folders their records named), else the statement of its own."""
    bodies = [statement_body(s) for s in statements]
    ends = [(s, statement_payload(s)) for s in bodies if s.lower().startswith(contracts.CLEAN_STATEMENT)]
    ends += [
        (s, statement_payload(s)["end"])
        for s in bodies
        if s.lower().startswith(contracts.SWITCH_STATEMENT) and "end" in statement_payload(s)
    ]
    (end,) = ends
    return end


def write_check(statements: list[str]) -> tuple[str, bool]:
    """The query that checked a run's write, among the run's statement
    bodies, and whether it rode in the extension's folder write (its `then`,
    one round trip) rather than running as a statement of its own."""
    (check,) = [s for s in statements if "__sb_file_bucket" in s]
    if not check.lower().startswith(contracts.WRITE_FOLDER_STATEMENT):
        return check, False
    literal = re.search(r"\sthen\s+'((?:[^'\\]|\\.)*)'", check)
    assert literal, check[:300]
    return re.sub(r"\\(.)", r"\1", literal.group(1)), True


def table_rows(spark: SparkSession, table: str) -> Counter:
    return Counter((r.k, r.payload, r.id) for r in spark.table(table).select("k", "payload", "id").collect())


def metadata(spark: SparkSession, table: str) -> dict:
    """{partition path ('' for an unpartitioned table): its record}, read by
    the package's one Python reader of the metadata format."""
    return {
        r.path: {
            "hash": r.spec.hash,
            "version": r.spec.version,
            "buckets": r.spec.buckets,
            "files": r.files,
            "rows": r.rows,
            "values": r.values,
            "merge": r.merge,
        }
        for r in read_table_metadata(SparkClient(spark), table).partitions
    }


def declared(spark: SparkSession, table: str) -> dict | None:
    spec = read_table_metadata(SparkClient(spark), table).declared
    return spec.to_record() if spec else None


def partition_bucket_counts(spark: SparkSession, table: str) -> dict[str, int]:
    """{partition name: its bucket count} as the Hive metastore holds each partition's storage (what Trino and
    Hive read; 0 where the partition has no bucket spec): Spark's catalog shows only the table's."""
    hive = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client().client()
    db, name = table.split(".")
    return {p.getName(): p.getBucketCount() for p in hive.getPartitions(hive.getTable(db, name))}


def table_properties(spark: SparkSession, table: str) -> dict[str, str]:
    return {r.key: r.value for r in spark.sql(f"show tblproperties {table}").collect()}


def partition_rows(spark: SparkSession, table: str) -> dict:
    """day offset -> Counter of (k, payload, id), as the table holds them."""
    out: dict = defaultdict(Counter)
    for r in spark.sql(f"select k, payload, id, datediff(day, date'2024-01-01') as d from {table}").collect():
        out[r.d][(r.k, r.payload, r.id)] += 1
    return dict(out)


def partition_layout_problems(spark: SparkSession, table: str) -> list[str]:
    """Every file checked against its partition's recorded spec AND against the
    spec the catalog declares (if any). Read as plain files, bucketing off."""
    meta = metadata(spark, table)
    decl = declared(spark, table)
    spark.conf.set("spark.sql.sources.bucketing.enabled", "false")
    try:
        rows = spark.table(table).select(F.input_file_name().alias("f"), "k", "day").collect()
    finally:
        spark.conf.unset("spark.sql.sources.bucketing.enabled")
    problems = []
    files_per = Counter()
    for r in rows:
        path = local_path(r.f)
        part = path.parent.name if "=" in path.parent.name else ""
        spec = meta.get(part)
        b = bucket_of(path.name)
        if spec is None:
            problems.append(f"no metadata for {part}")
            continue
        if hashing.bucket_id([r.k], ["int"], spec["buckets"], spec["hash"], spec["version"]) != b:
            problems.append(f"row in wrong file {path}")
        if (
            decl is not None
            and hashing.bucket_id([r.k], ["int"], decl["buckets"], decl["hash"], decl.get("bucketing_version", 1)) != b
        ):
            problems.append(f"catalog declares {decl} but {path} breaks it")
    for f in {r.f for r in rows}:
        path = local_path(f)
        files_per[(path.parent, bucket_of(path.name))] += 1
    problems += [f"{n} files for {k}" for k, n in files_per.items() if n > 1]
    return sorted(set(problems))


def failed_run(project: DbtProject, name: str, vars_: dict, fail_at: str) -> None:
    """Runs the model with a failure injected at `fail_at`, and checks it failed there."""
    result = run_model(project, name, vars_, expect_ok=False, fail_at=fail_at)
    assert f"injected failure at step '{fail_at}'" in failure_text(result) + str(node_messages(result))


def old_or_new_rows(spark: SparkSession, table: str, old: Expected, new: Expected) -> dict:
    """Checks every partition holds its old rows or its new ones; returns them (partition_rows)."""
    now = partition_rows(spark, table)
    for day in set(old.nonempty()) | set(new.nonempty()) | set(now):
        assert now.get(day) in (old.nonempty().get(day), new.nonempty().get(day)), day
    return now


def die_then_finish(spark: SparkSession, project: DbtProject, name: str, first: dict, then: dict, fail_at: str) -> str:
    """Runs the model with `first`, then with `then` dying at `fail_at`:
    every partition holds its old or its new rows, in their buckets; then
    with `then` again, which finishes the work. Returns the table's name."""
    expected = Expected()
    table = step(spark, project, name, expected, first)
    old = expected.copy()
    new = expected.copy()
    new.apply(spark, then)
    failed_run(project, name, then, fail_at)
    old_or_new_rows(spark, table, old, new)
    assert partition_layout_problems(spark, table) == []
    run_model(project, name, then)
    assert table_rows(spark, table) == new.rows()
    assert partition_layout_problems(spark, table) == []
    return table


def step(
    spark: SparkSession, project: DbtProject, name: str, expected: Expected, vars_: dict, layout: bool = True
) -> str:
    """Runs the model with `vars_`, applies the run to `expected`, and checks
    the table holds exactly the expected rows (and, with `layout`, that every
    file follows its partition's spec). Returns the table's name."""
    run_model(project, name, vars_)
    expected.apply(spark, vars_)
    table = f"{project.schema}.{name}"
    assert table_rows(spark, table) == expected.rows()
    if layout:
        assert partition_layout_problems(spark, table) == []
    return table
