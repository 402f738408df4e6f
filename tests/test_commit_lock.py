"""The commit lock's timing (macros/steps/lock.sql): a run that meets no
other run holds the lock by its choosing mark; a run that waits renews its
entry, so that no other run takes a live waiting run's entry for a dead
run's; an entry older than commit_lock_expiry is a dead run's and goes."""

from __future__ import annotations

import re
import threading
import time

import pytest

from harness.spark import extension_on
from spark_bucketing import contracts, extension
from tests.support.incremental import commit_end, model_sql, statement_body, statement_payload

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)


def _model(vars_: dict) -> str:
    return model_sql(vars_).replace("verify_layout=", "commit_lock_expiry=6, verify_layout=", 1)


def _lock_statements(statements: list[str]) -> list[str]:
    """The lock's statements: its entries, and the listing of the entries beside the table (`<alias>__dbt_*`)."""
    return [statement_body(s) for s in statements if "__dbt_lock_" in s or re.search(r"like '\w+__dbt_\*'", s)]


def _second_run_statements(dbt_project, name: str, spark=None) -> list[str]:
    """The statements of a one-day run into the table a first run built (two days); with `spark`, while another
    entry stands beside the table (`<name>__dbt_other`), which keeps the switch from taking the lock itself."""
    (dbt_project.root / "models" / f"{name}.sql").write_text(model_sql({"days": [0, 1]}))
    dbt_project.run(name)
    (dbt_project.root / "models" / f"{name}.sql").write_text(model_sql({"days": [1], "tag": 1}))
    statements: list[str] = []
    other = f"{dbt_project.schema}.{name}__dbt_other"
    if spark is not None:
        spark.sql(f"create view {other} as select 1 as held")
    try:
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
    finally:
        if spark is not None:
            spark.sql(f"drop view {other}")
    return statements


def _takes_its_own_lock(statement: str) -> bool:
    return statement.lower().startswith(contracts.SWITCH_STATEMENT) and '"lock": {"mark"' in statement


def test_an_uncontended_run_holds_the_lock_by_its_mark(spark, dbt_project):
    lock = _lock_statements(_second_run_statements(dbt_project, "lock_alone"))
    # Its mark, one listing, the release: no ticket.
    assert [s.split()[0] for s in lock] == ["create", "show", "drop"], lock
    assert "__dbt_lock_c_" in lock[0] and "__dbt_lock_t" not in " ".join(lock)


def test_with_the_extension_an_uncontended_switch_takes_and_releases_the_lock_itself(spark, dbt_project):
    """With no other entry beside the table, the switch makes the run's
    mark, lists the entries, finds the table as the run read it, switches
    and ends the commit, dropping the mark: the lock's one statement. The
    table's properties and partitions are read by no statement of their own."""
    name = "lock_alone_own"
    with extension_on(spark):
        statements = _second_run_statements(dbt_project, name)
    lock = _lock_statements(statements)
    assert len(lock) == 1 and _takes_its_own_lock(lock[0]), lock
    ended, ending = commit_end(statements)
    assert ended == lock[0]
    assert not [s for s in statements if statement_body(s).lower().startswith(("drop view", "show partitions"))]
    reads = ("show tblproperties", "describe table extended", "set spark.sql.extensions")
    assert len([s for s in statements if statement_body(s).lower().startswith(reads)]) == 1
    mark = statement_payload(lock[0])["lock"]["mark"]
    assert "__dbt_lock_c_" in mark and ending["release_lock"] == f"{dbt_project.schema}.{mark}"
    left = [r.tableName for r in spark.sql(f"show tables in {dbt_project.schema} like '{name}__dbt_lock_*'").collect()]
    assert left == []


def test_with_the_extension_the_statement_that_ends_the_commit_releases_the_lock(spark, dbt_project):
    """Where the switch cannot take the lock itself (another entry beside
    the table), it declines, changing nothing, and one statement marks the
    run, lists the entries and reads the table's properties; no DROP VIEW:
    the extension's statement that ends the commit drops the entry (and
    nothing of the lock is left). Here that is the switch: the partition it
    replaces was in the folder its record names, so the switch ends the
    commit itself (two statements of the lock in all, after the declined one)."""
    name = "lock_alone_ext"
    with extension_on(spark):
        statements = _second_run_statements(dbt_project, name, spark)
    declined = [s for s in statements if _takes_its_own_lock(statement_body(s))]
    assert len(declined) == 1
    statements = [s for s in statements if s not in declined]
    lock = _lock_statements(statements)
    assert lock[0].lower().startswith(contracts.MARK_LOCK_STATEMENT), lock
    # The switch names the entry too, to drop it if it fails; and ends the commit.
    assert lock[1].lower().startswith(contracts.SWITCH_STATEMENT) and len(lock) == 2, lock
    ended, ending = commit_end(statements)
    assert ended == lock[1]
    assert not [s for s in statements if statement_body(s).lower().startswith("drop view")]
    # The run holds the lock by its mark and commits on the properties the mark's statement read: the table's
    # properties are read once before the write (with its description, in one statement), and not again.
    # No statement of its own asks whether the extension is loaded: the description's answer tells.
    reads = ("show tblproperties", "describe table extended", "set spark.sql.extensions")
    shown = [s for s in statements if statement_body(s).lower().startswith(reads)]
    marked = next(s for s in statements if "__dbt_lock_" in s)
    assert len(shown) == 1 and statements.index(shown[0]) < statements.index(marked)
    assert f"/* {contracts.DESCRIBE_REQUEST} query as " in statement_body(shown[0]).lower(), shown
    # The table's partitions are listed once too, by the mark's statement, under the lock: no SHOW PARTITIONS.
    assert not [s for s in statements if statement_body(s).lower().startswith("show partitions")]
    mark = re.search(r" entry (\S+)$", lock[0]).group(1)
    assert "__dbt_lock_c_" in mark
    assert ending["release_lock"] == f"{dbt_project.schema}.{mark}"
    left = [r.tableName for r in spark.sql(f"show tables in {dbt_project.schema} like '{name}__dbt_lock_*'").collect()]
    assert left == []


def test_the_mark_statement_reads_what_show_tblproperties_and_show_partitions_read(spark, dbt_project):
    """The extension's mark statement creates the mark, then returns the
    entries beside the table, its properties and its partitions' paths, as
    SHOW TABLES, SHOW TBLPROPERTIES and SHOW PARTITIONS give them (a path
    with a character Hive escapes too); before the table exists, only the
    entries."""
    schema = dbt_project.schema
    table = f"{schema}.lock_reads"
    mark = "__dbt_lock_c_1_r1_aaaaaabbbbbb"
    spark.sql(f"create table {table} (k int, p string) using parquet partitioned by (p) tblproperties ('a' = 'b')")
    spark.sql(f"insert into {table} values (1, 'x'), (2, 'y/z'), (3, '')")
    with extension_on(spark):
        rows = spark.sql(f"{contracts.MARK_LOCK_STATEMENT} {table} entry lock_reads{mark}").collect()
        missing = spark.sql(f"{contracts.MARK_LOCK_STATEMENT} {schema}.lock_none entry lock_none{mark}").collect()
    kinds = ("entry", "property", "partition")
    by_kind = {kind: [(r.name, r.value) for r in rows if r.kind == kind] for kind in kinds}
    assert by_kind["entry"] == [(f"lock_reads{mark}", None)]
    shown = spark.sql(f"show tblproperties {table}").collect()
    assert sorted(by_kind["property"]) == sorted((r[0], r[1]) for r in shown)
    listed = spark.sql(f"show partitions {table}").collect()
    assert sorted(by_kind["partition"]) == sorted((r[0], None) for r in listed)
    assert len(by_kind["partition"]) == 3 and len(rows) == sum(len(v) for v in by_kind.values())
    assert [(r.kind, r.name) for r in missing] == [("entry", f"lock_none{mark}")]
    for name in ("lock_reads", "lock_none"):
        spark.sql(f"drop view {schema}.{name}{mark}")


def test_the_describe_request_reads_what_describe_show_tblproperties_set_and_describe_query_read(spark, dbt_project):
    """DESCRIBE TABLE EXTENDED with the extension's request in a comment
    returns DESCRIBE's rows, then the table's properties as SHOW
    TBLPROPERTIES shows them, then the extension's switch as the session has
    it, then, given a query, its columns as DESCRIBE QUERY gives them (a
    query over lines, with a `;` in a literal, a quoted name and a line
    comment last), each row headed by its marker. Stock Spark's parser reads
    the same statement as the plain DESCRIBE, which tells a run that the
    extension is not loaded."""
    table = f"{dbt_project.schema}.described"
    spark.sql(f"create table {table} (k int, p string) using parquet partitioned by (p) tblproperties ('a' = 'b=[c]')")
    query = f"select k,\n  cast(p as int) as q, 'a;b' as `c d`\nfrom {table} where p <> 'query as x' -- last"
    request = f"describe table extended {table} /* {contracts.DESCRIBE_REQUEST}\n*/"
    queried_request = f"describe table extended {table} /* {contracts.DESCRIBE_REQUEST} query as {query}\n*/;"
    with extension_on(spark, False):
        rows = [tuple(r) for r in spark.sql(request).collect()]
        queried = spark.sql(queried_request).collect()
    with extension_on(spark):
        switched_on = [tuple(r) for r in spark.sql(request).collect()]
    described = [tuple(r) for r in spark.sql(f"describe table extended {table}").collect()]
    shown = [(contracts.PROPERTY_ROW, r[0], r[1]) for r in spark.sql(f"show tblproperties {table}").collect()]
    setting = (contracts.SETTING_ROW, extension.SWITCH, "false")
    assert rows == described + shown + [setting] and ("a", "b=[c]") in [r[1:] for r in shown]
    assert switched_on[-1] == (contracts.SETTING_ROW, extension.SWITCH, "true")
    columns = [(contracts.QUERY_COLUMN_ROW, r[0], r[1]) for r in spark.sql(f"describe query {query}").collect()]
    assert [c[1:] for c in columns] == [("k", "int"), ("q", "int"), ("c d", "string")]
    assert [tuple(r) for r in queried] == rows + columns
    stock = spark._jvm.org.apache.spark.sql.execution.SparkSqlParser()

    def parsed(sql: str) -> str:
        return re.sub(r"#\d+", "", stock.parsePlan(sql).toString())  # each parse numbers its columns anew

    assert parsed(request) == parsed(queried_request) == parsed(f"describe table extended {table}")


def test_a_schema_listing_leaves_out_the_entries_dropped_while_it_reads_them(spark):
    """dbt-spark lists a schema with SHOW TABLE EXTENDED as a run starts and,
    where the listing fails, takes the schema for empty (a run then builds
    its table from scratch). Spark's command lists the names, then reads
    each entry, and fails where one was dropped in between: here a lock
    entry created and dropped again and again by another thread, named to
    be read after 20 tables (stock Spark failed about 3 listings in 4 so).
    With the extension loaded, switched off or on, every listing answers,
    with every table and the entries it read."""
    spark.sql("create database if not exists t_listing")
    for i in range(20):
        spark.sql(f"create table if not exists t_listing.stable_{i} (a int) using parquet")
    spark.sql("create view if not exists t_listing.stable_view as select 1 as a")
    stop = threading.Event()
    churned = []

    def churn() -> None:
        while not stop.is_set():
            entry = f"t_listing.zz_lock_{len(churned)}"
            spark.sql(f"create view {entry} as select 1 as held")
            spark.sql(f"drop view {entry}")
            churned.append(entry)

    thread = threading.Thread(target=churn)
    thread.start()
    listings, failures = [], []
    try:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                listings.append(spark.sql("show table extended in t_listing like '*'").collect())
            except Exception as e:  # noqa: BLE001 - every failure is counted and shown
                failures.append(str(e)[:300])
    finally:
        stop.set()
        thread.join()
    assert not failures, failures[:3]
    assert len(listings) >= 5 and len(churned) >= 20, (len(listings), len(churned))
    for rows in listings:
        info = {r.tableName: r.information for r in rows}
        assert {f"stable_{i}" for i in range(20)} | {"stable_view"} <= set(info)
        assert "Type: VIEW" in info["stable_view"] and "Provider: parquet" in info["stable_0"]
        # The session's temporary views (other tests') come with them, as Spark lists them.
        assert all(r.namespace == ("" if r.isTemporary else "t_listing") for r in rows)


def test_a_model_with_a_bracketed_comment_is_described_by_a_statement_of_its_own(spark, dbt_project):
    """A model whose SQL holds a bracketed comment cannot ride in the
    description's comment (its `*/` would end it): the run sends the request
    without the query and a DESCRIBE QUERY of the model, still with no SET
    before them, and the extension writes and switches the day."""
    name = "described_comment"
    model = dbt_project.root / "models" / f"{name}.sql"
    with extension_on(spark):
        model.write_text(model_sql({"days": [0, 1]}).replace("from range(", "/* the rows */ from range("))
        dbt_project.run(name)
        model.write_text(model_sql({"days": [1], "tag": 1}).replace("from range(", "/* the rows */ from range("))
        statements: list[str] = []
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
    bodies = [statement_body(s).lower() for s in statements]
    described = [b for b in bodies if b.startswith("describe table extended")]
    assert len(described) == 1 and described[0].endswith(f"/* {contracts.DESCRIBE_REQUEST}\n*/"), described
    assert len([b for b in bodies if b.startswith("describe query")]) == 1, bodies
    assert not [b for b in bodies if b.startswith("set spark.sql.extensions")], bodies
    assert [b for b in bodies if b.startswith(contracts.SWITCH_STATEMENT)], bodies
    days = spark.sql(
        f"select day, count(*) as n, min(payload) as p from {dbt_project.schema}.{name} group by day order by day"
    ).collect()
    assert [(str(r.day), r.n, r.p[:3]) for r in days] == [("2024-01-01", 200, "v0-"), ("2024-01-02", 200, "v1-")]


def test_a_waiting_run_renews_its_entry_and_takes_the_lock_of_a_dead_run(spark, dbt_project):
    name = "lock_wait"
    schema = dbt_project.schema
    (dbt_project.root / "models" / f"{name}.sql").write_text(_model({"days": [0, 1]}))
    dbt_project.run(name)
    # A dead run's ticket that does not expire, so that the run finds it however long its write takes; once the run
    # has taken its ticket, the dead ticket is dated 1 s ahead: it expires (commit_lock_expiry=6) about 8 s later.
    dead_run = f"r{int(time.time())}_aaaaaabbbbbb"
    standing = f"{name}__dbt_lock_t000001_{int(time.time()) + 3600}_{dead_run}"
    spark.sql(f"create view {schema}.{standing} as select 1 as held")
    redated: dict[str, float | str] = {}

    def redate_once_the_run_waits() -> None:
        deadline = time.time() + 600
        while time.time() < deadline:
            if spark.sql(f"show tables in {schema} like '{name}__dbt_lock_t000002_*'").collect():
                dead = f"{name}__dbt_lock_t000001_{int(time.time()) + 1}_{dead_run}"
                spark.sql(f"create view {schema}.{dead} as select 1 as held")
                spark.sql(f"drop view {schema}.{standing}")
                redated.update({"name": dead, "at": time.time()})
                return
            time.sleep(0.1)

    watcher = threading.Thread(target=redate_once_the_run_waits)
    watcher.start()
    (dbt_project.root / "models" / f"{name}.sql").write_text(_model({"days": [1], "tag": 1}))
    statements: list[str] = []
    try:
        assert dbt_project.dbt("run", "--select", name, statements=statements).success
    finally:
        watcher.join()
    assert redated, "the run took no ticket"
    assert time.time() - float(redated["at"]) >= 6
    lock = _lock_statements(statements)
    created = [re.search(r"__dbt_lock_(t\d+)_(\d+)_(r\d+_[0-9a-f]{12})", s) for s in lock if s.startswith("create")]
    tickets = [m.groups() for m in created if m]
    # One ticket, above the dead run's, renewed with later times while the run waited.
    assert {t for t, _, _ in tickets} == {"t000002"}, lock
    epochs = [int(e) for _, e, _ in tickets]
    assert len(epochs) >= 2 and epochs == sorted(epochs) and epochs[-1] - epochs[0] >= 2, lock
    assert any(s.startswith("drop") and str(redated["name"]) in s for s in lock), lock
    left = [r.tableName for r in spark.sql(f"show tables in {schema} like '{name}__dbt_lock_*'").collect()]
    assert left == []
