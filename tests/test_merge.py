"""bucketed_incremental with incremental_strategy='merge': upserts and
change-feed deletes by unique_key on plain Parquet/ORC tables (the randomized
change feed is test_merge_randomized.py); only the partitions a
merge touches are rewritten; a failure at any step loses and doubles nothing;
bad input fails before anything is written."""

from __future__ import annotations

import json
import re
from collections import Counter
from dataclasses import dataclass, field
from datetime import date

import pytest

from harness.dbt_project import DbtProject, failure_text, node_messages
from harness.spark import REPO_ROOT, table_location
from spark_bucketing import dbt_run_end, plans
from spark_bucketing.files import data_files, local_path
from tests.support.incremental import metadata

COLUMNS = ("id", "day", "payload", "amount")


def model_sql(rows: list[tuple], config: dict) -> str:
    """A model whose rows are `rows`: (id, day offset, payload, amount or None, deleted)."""
    values = ", ".join(f"({i}, {d}, '{p}', {'null' if a is None else a}, {str(x).lower()})" for i, d, p, a, x in rows)
    args = ", ".join(f"{k}={v!r}" for k, v in config.items())
    return (
        "{{ config(materialized='bucketed_incremental', incremental_strategy='merge', " + args + ") }}\n"
        "select cast(id as int) as id, date_add(date'2024-01-01', d) as day, cast(payload as string) as payload,\n"
        "       cast(amount as double) as amount, cast(deleted as boolean) as is_deleted\n"
        f"from values {values} as t(id, d, payload, amount, deleted)\n"
    )


@dataclass
class TableModel:
    """What a merged table must hold: unique key -> (id, day offset, payload, amount)."""

    key: tuple[str, ...]
    update: tuple[str, ...] = COLUMNS
    rows: dict = field(default_factory=dict)

    def key_of(self, row: tuple) -> tuple:
        return tuple(row[COLUMNS.index(k)] for k in self.key)

    def merge(self, batch: list[tuple], first: bool = False) -> dict:
        """Applies `batch`; returns what it did to each partition the merge
        reads (the days of the batch's rows and the days its keys lived in):
        {day: merge_row_accounting's counts}."""
        scope = {row[1] for row in batch} | {self.rows[k][1] for k in map(self.key_of, batch) if k in self.rows}
        counts = {d: Counter(rows_before=sum(r[1] == d for r in self.rows.values())) for d in scope}
        for *row, deleted in batch:
            row = tuple(row)
            k = self.key_of(row)
            old = self.rows.get(k)
            if deleted:
                if self.rows.pop(k, None) is not None:
                    counts[old[1]]["deleted"] += 1
            elif old is not None and not first:
                self.rows[k] = tuple(row[i] if c in self.update else old[i] for i, c in enumerate(COLUMNS))
                if self.rows[k][1] == old[1]:
                    counts[old[1]]["updated"] += 1
                else:
                    counts[old[1]]["moved_out"] += 1
                    counts[self.rows[k][1]]["moved_in"] += 1
            else:
                self.rows[k] = row
                counts[row[1]]["inserted"] += 1
        fields = ("rows_before", "inserted", "updated", "deleted", "moved_in", "moved_out")
        return {
            d: {**{f: c[f] for f in fields}, "rows_after": sum(r[1] == d for r in self.rows.values())}
            for d, c in counts.items()
        }

    def counter(self) -> Counter:
        return Counter(self.rows.values())

    def days(self) -> dict:
        out: dict = {}
        for row in self.rows.values():
            out.setdefault(row[1], Counter())[row] += 1
        return out


def table_counter(spark, table: str) -> Counter:
    rows = spark.sql(f"select id, datediff(day, date'2024-01-01') as d, payload, amount from {table}").collect()
    return Counter((r.id, r.d, r.payload, r.amount) for r in rows)


def table_days(spark, table: str) -> dict:
    out: dict = {}
    for row in table_counter(spark, table).elements():
        out.setdefault(row[1], Counter())[row] += 1
    return out


def spark_config(**extra) -> dict:
    """A Spark-hash model: 4 buckets on id, daily partitions, plus `extra`."""
    return {"clustered_by": ["id"], "buckets": 4, "partition_by": ["day"], "bucket_hash": "spark", **extra}


def run_batch(
    project: DbtProject, name: str, batch: list[tuple], config: dict, expect_ok: bool = True, fail_at: str | None = None
):
    (project.root / "models" / f"{name}.sql").write_text(model_sql(batch, config))
    result = project.dbt("run", "--select", name, fail_at=fail_at)
    if expect_ok:
        assert result.success, failure_text(result)
    return result


def recorded_accounting(spark, table: str) -> dict:
    """{day offset: the merge row accounting recorded in the partition's metadata}."""
    return {
        (date.fromisoformat(record["values"]["day"]) - date(2024, 1, 1)).days: record["merge"]
        for record in metadata(spark, table).values()
        if record["merge"] is not None
    }


def _layout_and_metadata(project: DbtProject, name: str) -> None:
    result = project.test_model(name, "spark_bucketing.bucket_layout", "spark_bucketing.bucket_metadata")
    assert result.success, failure_text(result)


def test_update_columns_keep_the_other_columns(spark, dbt_project):
    name = "merge_update_cols"
    config = spark_config(unique_key=["id"], merge_update_columns=["payload"])
    model = TableModel(key=("id",), update=("payload",))
    first = [(1, 0, "a", 1.0, False), (2, 1, "b", 2.0, False)]
    run_batch(dbt_project, name, first, config)
    model.merge(first, first=True)
    # id 1 arrives with another day and amount: only its payload changes.
    batch = [(1, 3, "a2", 9.0, False), (3, 2, "c", None, False)]
    run_batch(dbt_project, name, batch, config)
    model.merge(batch)
    assert table_counter(spark, f"{dbt_project.schema}.{name}") == model.counter()
    assert (1, 0, "a2", 1.0) in model.counter()


def test_an_unpartitioned_table_is_merged_whole(spark, dbt_project):
    name = "merge_unpartitioned"
    config = {
        "clustered_by": ["id"],
        "buckets": 4,
        "unique_key": ["id"],
        "merge_delete_column": "is_deleted",
        "merge_row_accounting": True,
    }
    model = TableModel(key=("id",))
    first = [(i, 0, "a", float(i), False) for i in range(20)]
    run_batch(dbt_project, name, first, config)
    model.merge(first, first=True)
    batch = [(3, 0, "b", None, False), (4, 0, "", None, True), (50, 0, "c", 5.0, False)]
    run_batch(dbt_project, name, batch, config)
    model.merge(batch)
    assert table_counter(spark, f"{dbt_project.schema}.{name}") == model.counter()
    _layout_and_metadata(dbt_project, name)
    props = dict(spark.sql(f"show tblproperties {dbt_project.schema}.{name}").collect())
    assert json.loads(props["spark_bucketing.table"])["merge"] == {
        "rows_before": 20,
        "inserted": 1,
        "updated": 1,
        "deleted": 1,
        "moved_in": 0,
        "moved_out": 0,
        "rows_after": 20,
    }


def _files_by_day(spark, table: str) -> dict:
    rows = spark.sql(f"select distinct input_file_name() as f, cast(day as string) as day from {table}").collect()
    out: dict = {}
    for r in rows:
        out.setdefault(r.day, set()).add(local_path(r.f))
    return out


def test_untouched_partitions_keep_their_folders_and_files(spark, dbt_project):
    name = "merge_untouched"
    config = spark_config(unique_key=["id", "day"], merge_delete_column="is_deleted")
    table = f"{dbt_project.schema}.{name}"
    first = [(i, i % 5, "p", float(i), False) for i in range(100)]
    run_batch(dbt_project, name, first, config)
    before = _files_by_day(spark, table)
    mtimes = {f: f.stat().st_mtime_ns for fs in before.values() for f in fs}
    # One update and one delete, both in day 2.
    run_batch(dbt_project, name, [(2, 2, "new", 1.0, False), (7, 2, "gone", None, True)], config)
    after = _files_by_day(spark, table)
    for day in ("2024-01-01", "2024-01-02", "2024-01-04", "2024-01-05"):
        assert after[day] == before[day]
        assert all(f.stat().st_mtime_ns == mtimes[f] for f in after[day])
    assert after["2024-01-03"].isdisjoint(before["2024-01-03"])
    assert spark.sql(f"select count(*) from {table} where day = date'2024-01-03'").first()[0] == 19


def _partitions_old_or_new(spark, table: str, old: TableModel, new: TableModel) -> None:
    now = table_days(spark, table)
    old_days, new_days = old.days(), new.days()
    for day in set(now) | set(old_days) | set(new_days):
        assert now.get(day, Counter()) in (old_days.get(day, Counter()), new_days.get(day, Counter())), day


@pytest.mark.parametrize("fail_at", ["after_write", "before_switch", "mid_switch", "before_cleanup"])
def test_failure_at_each_step_of_a_merge_loses_nothing(spark, dbt_project, fail_at):
    name = f"merge_fail_{fail_at}"
    config = spark_config(unique_key=["id"], merge_delete_column="is_deleted")
    table = f"{dbt_project.schema}.{name}"
    old = TableModel(key=("id",))
    first = [(i, i % 4, "p", float(i), False) for i in range(60)]
    run_batch(dbt_project, name, first, config)
    old.merge(first, first=True)
    # Updates that move rows between days, deletes, inserts: three or more partitions change.
    batch = [
        (1, 3, "moved", 5.0, False),
        (2, 2, "upd", None, False),
        (5, 1, "x", None, True),
        (200, 0, "ins", 1.0, False),
    ]
    new = TableModel(key=("id",), rows=dict(old.rows))
    new.merge(batch)
    result = run_batch(dbt_project, name, batch, config, expect_ok=False, fail_at=fail_at)
    assert "injected failure" in node_messages(result)[name]
    _partitions_old_or_new(spark, table, old, new)
    # The next run completes the merge (it is idempotent for these rows).
    run_batch(dbt_project, name, batch, config)
    assert table_counter(spark, table) == new.counter()
    _layout_and_metadata(dbt_project, name)


def _plan_tree(plan: str) -> list[tuple[int, str]]:
    """(depth, node) per line of a physical plan's text."""
    out = []
    for line in plan.splitlines():
        text = line.lstrip(" :+-")
        if text:
            out.append((len(line) - len(text), re.sub(r"^\*\(\d+\) ", "", text)))
    return out


def _shuffled_scans(plan: str) -> dict[str, bool]:
    """For each FileScan under the join: whether an Exchange stands between it and the join."""
    tree = _plan_tree(plan)
    out = {}
    for i, (depth, text) in enumerate(tree):
        if not text.startswith("FileScan"):
            continue
        shuffled, d = False, depth
        for up_depth, up in reversed(tree[:i]):
            if up_depth < d:
                d = up_depth
                if "Join" in up.split()[0]:
                    break
                shuffled = shuffled or up.startswith("Exchange")
        out[text.split("[")[0].split()[-1]] = shuffled
    return out


@pytest.mark.parametrize("unique_key", [["id"], ["id", "day"]])
def test_the_table_side_of_a_merge_is_read_bucketed_without_a_shuffle(spark, dbt_project, unique_key, monkeypatch):
    """unique_key equal to, or holding, the bucket columns of a Spark-hash table."""
    # The write is planned again below from the failed run's side entry, which the package's end of run (the
    # plugin's, tests/test_failures.py) would drop at the end of the command: left out for this test's commands.
    monkeypatch.setattr(dbt_run_end, "run_package_end", lambda *args: None)
    name = "merge_plan_" + "_".join(unique_key)
    config = spark_config(unique_key=unique_key)
    first = [(i, i % 3, "p", float(i), False) for i in range(60)]
    run_batch(dbt_project, name, first, config)
    statements: list[str] = []
    (dbt_project.root / "models" / f"{name}.sql").write_text(model_sql([(1, 2, "u", 1.0, False)], config))
    # The hook as --vars (the other failure tests set it through the environment).
    vars_ = json.dumps({"spark_bucketing_fail_at": "after_write"})
    result = dbt_project.dbt("run", "--select", name, "--vars", vars_, statements=statements)
    assert "injected failure at step 'after_write'" in node_messages(result)[name]
    marker = f"insert into table {dbt_project.schema}.{name}__dbt_incr"
    (write,) = [s for s in statements if marker in s.lower()]
    select = write[write.lower().index("select", write.lower().index(marker)) :]
    plan = plans.executed_plan(spark, select)
    # A side entry is named after its run (<alias>__dbt_new_<run>): the run id is left out.
    scans = {
        re.sub(r"_r[0-9]+_[0-9a-f]{12}$", "", table.rsplit(".", 1)[-1]): shuffled
        for table, shuffled in _shuffled_scans(plan).items()
    }
    # The table's side is read bucketed with no Exchange; only the new rows are
    # shuffled, and the join's tasks are the buckets: the write adds no shuffle.
    assert scans == {name: False, f"{name}__dbt_new": True}, plan
    assert "Bucketed: true" in plan
    assert plan.count("Exchange") == 1, plan
    assert "repartition" not in write.lower()


BAD_MERGES = {
    # Without unique_key a merge inserts every row, as dbt's does (test_routed_incremental.py): a delete has no key.
    "delete column without unique_key": (
        {"merge_delete_column": "is_deleted"},
        "config 'merge_delete_column': is set without unique_key",
    ),
    "unknown delete column": (
        {"unique_key": ["id"], "merge_delete_column": "gone"},
        "config 'merge_delete_column': column 'gone' is not produced",
    ),
    "delete column not boolean": (
        {"unique_key": ["id"], "merge_delete_column": "payload"},
        "config 'merge_delete_column': column 'payload' has type string",
    ),
    "update and exclude": (
        {"unique_key": ["id"], "merge_update_columns": ["payload"], "merge_exclude_columns": ["amount"]},
        "is set together with merge_exclude_columns",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD_MERGES))
def test_bad_merge_config_fails_before_anything_is_written(spark, dbt_project, case):
    name = "merge_bad_" + case.replace(" ", "_")
    extra, message = BAD_MERGES[case]
    result = run_batch(dbt_project, name, [(1, 0, "a", 1.0, False)], spark_config(**extra), expect_ok=False)
    assert message in node_messages(result)[name]
    assert not spark.catalog.tableExists(f"{dbt_project.schema}.{name}")


def test_an_unknown_key_column_fails_the_first_incremental_run_before_anything_is_written(spark, dbt_project):
    """As dbt's merge: the first build matches no rows and does not read unique_key; the first run that merges
    fails, naming the column, and leaves the table as it was."""
    name = "merge_bad_unknown_key_column"
    table = f"{dbt_project.schema}.{name}"
    config = spark_config(unique_key=["nope"])
    run_batch(dbt_project, name, [(1, 0, "a", 1.0, False)], config)
    before = table_counter(spark, table)
    files = sorted(str(p) for p in data_files(table_location(spark, table)))
    result = run_batch(dbt_project, name, [(1, 0, "b", 2.0, False)], config, expect_ok=False)
    assert "config 'unique_key': column 'nope' is not produced" in node_messages(result)[name]
    assert table_counter(spark, table) == before
    assert sorted(str(p) for p in data_files(table_location(spark, table))) == files


def test_duplicate_keys_and_missing_deletes_fail_before_anything_is_written(spark, dbt_project):
    name = "merge_dupes"
    config = spark_config(unique_key=["id"], merge_delete_column="is_deleted", merge_validate_deletes=True)
    table = f"{dbt_project.schema}.{name}"
    run_batch(dbt_project, name, [(1, 0, "a", 1.0, False), (2, 1, "b", 2.0, False)], config)
    before = table_counter(spark, table)
    files = sorted(str(p) for p in data_files(table_location(spark, table)))

    result = run_batch(dbt_project, name, [(1, 0, "x", None, False), (1, 1, "y", None, False)], config, expect_ok=False)
    message = node_messages(result)[name]
    assert "the new rows repeat keys id, e.g. (1): 2 rows" in message, message

    result = run_batch(dbt_project, name, [(2, 1, "b", None, True), (77, 1, "q", None, True)], config, expect_ok=False)
    message = node_messages(result)[name]
    assert "delete keys the table does not hold, e.g. (77)" in message, message

    assert table_counter(spark, table) == before
    assert sorted(str(p) for p in data_files(table_location(spark, table))) == files


LOSSY_MERGE = """
{% macro default__merge_sql(target, staged, columns, merge, spec, scope) -%}
  select * from ({{ spark_bucketing.default__merge_sql(target, staged, columns, merge, spec, scope) }}) as lossy
  where id <> 2
{%- endmacro %}
"""


def test_row_accounting_stops_a_merge_that_loses_rows(spark, tmp_path):
    """A project that overrides merge_sql (a dispatched macro) with one that
    drops a row it should keep: with merge_row_accounting the run fails before
    anything is published, and a record whose counts do not add up fails
    bucket_metadata."""
    project = DbtProject(
        tmp_path,
        schema="t_merge_lossy",
        package_dir=REPO_ROOT,
        project_overrides={
            "dispatch": [{"macro_namespace": "spark_bucketing", "search_order": ["sb_it", "spark_bucketing"]}]
        },
    )
    project.setup()
    spark.sql("create database if not exists t_merge_lossy")
    name = "merge_lossy"
    table = f"t_merge_lossy.{name}"
    config = spark_config(unique_key=["id"], merge_row_accounting=True)
    run_batch(project, name, [(i, i % 2, "p", float(i), False) for i in range(10)], config)
    before = table_counter(spark, table)
    files = sorted(str(p) for p in data_files(table_location(spark, table)))

    project.write_file("macros/lossy.sql", LOSSY_MERGE)
    result = run_batch(project, name, [(4, 0, "u", 1.0, False)], config, expect_ok=False)
    message = node_messages(result)[name]
    assert "merge_row_accounting: the merged rows do not add up in 1 partitions" in message, message
    assert (
        "day=2024-01-01: before 5 + inserted 0 + moved in 0 - deleted 0 - moved out 0 = 5, but 4 rows were written"
        in message
    )
    assert table_counter(spark, table) == before
    assert sorted(str(p) for p in data_files(table_location(spark, table))) == files

    (project.root / "macros" / "lossy.sql").unlink()
    run_batch(project, name, [(4, 0, "u", 1.0, False)], config)
    key = "spark_bucketing.partition.day=2024-01-01"
    record = json.loads(dict(spark.sql(f"show tblproperties {table}").collect())[key])
    assert record["merge"] == {
        "rows_before": 5,
        "inserted": 0,
        "updated": 1,
        "deleted": 0,
        "moved_in": 0,
        "moved_out": 0,
        "rows_after": 5,
    }
    _layout_and_metadata(project, name)
    record["merge"]["deleted"] = 1
    spark.sql(f"alter table {table} set tblproperties ('{key}' = '{json.dumps(record)}')")
    result = project.test_model(name, "spark_bucketing.bucket_metadata")
    assert not result.success
    spark.sql("drop database t_merge_lossy cascade")
