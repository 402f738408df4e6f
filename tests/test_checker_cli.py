"""`spark-bucketing check` on a real dbt project: the text report, the JSON
schema, --fail-on exit codes, --verify and --catalog live against the built
tables, bad input, the Trino model, and the sqlfluff rule on a dbt model."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from harness.dbt_project import ROUTING
from spark_bucketing import cli

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

TABLES = {
    "fact": {"clustered_by": "k", "buckets": 8, "bucket_hash": "spark"},
    "dim": {"clustered_by": "k", "buckets": 8, "bucket_hash": "spark"},
    "dim16": {"clustered_by": "k", "buckets": 16, "bucket_hash": "spark"},
    "hfact": {"clustered_by": "k", "buckets": 16, "bucket_hash": "hive"},
    "hdim": {"clustered_by": "k", "buckets": 8, "bucket_hash": "hive"},
}
QUERIES = {
    "good_join": "select f.k, d.v from {{ ref('fact') }} f\njoin {{ ref('dim') }} d\n  on f.k = d.k",
    "bad_join": "select f.k, d.v\nfrom {{ ref('fact') }} f\n\njoin {{ ref('dim16') }} d on f.k = d.k",
    "hive_join": "select * from {{ ref('hfact') }} h join {{ ref('hdim') }} d on h.k = d.k",
    "grouped": "with t as (\n  select k, count(*) as n from {{ ref('fact') }} group by k\n)\nselect * from t",
    "broken_sql": "select from from where",
    "unknown_rel": "select * from {{ ref('fact') }} f join some_schema.not_there x on f.k = x.k",
    "source_join": "select * from {{ ref('fact') }} f join {{ source('raw', 'events') }} e on f.k = e.k",
    # Filters and joins Spark's optimizer moves, which the static model follows: a filter carried through
    # an aggregate to the scan (1 of 8 buckets read); a full join the next join's inner condition makes a
    # right outer join, whose output keeps the right side's partitioning (the next join's left side is
    # not shuffled again).
    "pruned_agg": "select * from (select k, count(*) as n from {{ ref('fact') }} group by k) a\nwhere a.k = 1",
    "outer_then_join": "select a.k, b.k as bk from {{ ref('plain') }} a full join {{ ref('plain') }} b on a.k = b.k\n"
    "join {{ ref('plain') }} c on c.k = b.k",
    # A DISTINCT over a UNION ALL of two bucketed reads, which keeps their placement: the live test below
    # makes the static verdict wrong on purpose, to see --catalog live replace it and count it.
    "union_distinct": "select distinct a.k from (select k, v from {{ ref('fact') }}\n"
    "union all select k, v from {{ ref('dim') }}) a",
    # What the static model does not follow yet (issue 64), which --catalog live takes from the plan: the
    # aggregation by (k, v) Spark plans under a COUNT(DISTINCT v) grouped by k.
    "distinct_count": "select k, count(distinct v) as n from {{ ref('fact') }}\ngroup by k",
    # A partitioned bucketed_incremental model's table (never built: the manifest says how it is built), whose
    # runs replace partitions (Trino refused it once a run without the extension had: no more).
    "daily_join": "select d.k from {{ ref('daily') }} d join {{ ref('hfact') }} h on d.k = h.k",
    # The same through dbt-spark's `incremental`, which the project routes to the package (ROUTING, as microbatch
    # models need): a Hive-hash table of the package, not dbt-spark's Spark-hash CLUSTERED BY.
    "routed_join": "select r.k from {{ ref('routed') }} r join {{ ref('hfact') }} h on r.k = h.k",
}
# A source table that exists, bucketed by k into 8, whose sources.yml states nothing about bucketing.
SOURCES = """
sources:
  - name: raw
    schema: "{{ target.schema }}"
    tables:
      - name: events
"""


@pytest.fixture(scope="module")
def project(spark, dbt_project):
    for name, config in TABLES.items():
        dbt_project.write_model(
            name,
            "select cast(id % 100 as int) as k, concat('v', id) as v from range(0, 500)",
            {"materialized": "bucketed_table", **config},
        )
    dbt_project.write_model(
        "daily",
        "select cast(id % 100 as int) as k, date_add(date'2024-01-01', cast(id % 2 as int)) as day from range(0, 500)",
        {"materialized": "bucketed_incremental", "partition_by": "day", "clustered_by": "k", "buckets": 16},
    )
    dbt_project.write_file("macros/incremental.sql", ROUTING)
    dbt_project.write_model(
        "routed",
        "select cast(id % 100 as int) as k, date_add(date'2024-01-01', cast(id % 2 as int)) as day from range(0, 500)",
        {"materialized": "incremental", "partition_by": "day", "clustered_by": "k", "buckets": 16},
    )
    dbt_project.write_model(
        "plain", "select cast(id % 100 as int) as k, concat('v', id) as v from range(0, 500)", {"materialized": "table"}
    )
    for name, sql in QUERIES.items():
        (dbt_project.root / "models" / f"{name}.sql").write_text("{{ config(materialized='view') }}\n" + sql + "\n")
    (dbt_project.root / "models" / "sources.yml").write_text(SOURCES)
    dbt_project.run(*TABLES, "plain")
    spark.sql(
        f"create table {dbt_project.schema}.events using parquet clustered by (k) into 8 buckets"
        " as select cast(id % 100 as int) as k from range(0, 100)"
    )
    # Every test may reuse the manifest (--no-compile), whatever order they run in.
    assert dbt_project.dbt("compile").success
    return dbt_project


def _check(project, *args):
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["check", "--project-dir", str(project.root), "--profiles-dir", str(project.root), *args])
    return code, out.getvalue(), err.getvalue()


def test_text_report_and_fail_on_shuffle(project):
    code, out, _ = _check(project, "--fail-on", "shuffle")
    assert code == 1
    assert "model.sb_it.bad_join (models/bad_join.sql)" in out
    assert "join      SHUFFLE" in out and "BUCKET_COUNT_MISMATCH" in out
    assert "fix  : give both tables the same bucket count" in out
    assert "model.sb_it.good_join" in out and "join      no shuffle" in out
    assert "1 joins between bucketed relations shuffle" in out

    code, out, _ = _check(project, "--no-compile", "--select", "good_join", "grouped", "--fail-on", "shuffle")
    assert code == 0, out
    code, _, _ = _check(project, "--no-compile", "--select", "hive_join", "--fail-on", "shuffle")
    assert code == 0  # Hive-hash tables are not bucketed for Spark: nothing bucketed to lose
    code, _, _ = _check(
        project,
        "--no-compile",
        "--select",
        "bad_join",
        "--fail-on",
        "shuffle",
        "--conf",
        "spark.sql.bucketing.coalesceBucketsInJoin.enabled=true",
    )
    assert code == 0


def test_json_schema(project):
    code, out, _ = _check(project, "--no-compile", "--format", "json")
    assert code == 0
    data = json.loads(out)
    assert set(data) == {"engine", "models"} and data["engine"] == "spark"
    by_model = {m["model"]: m["findings"] for m in data["models"]}
    (bad,) = by_model["model.sb_it.bad_join"]
    assert set(bad) == {"kind", "line", "shuffle_free", "sides", "suggestions"}
    assert bad["kind"] == "join" and bad["line"] == 5 and bad["shuffle_free"] is False
    left, right = bad["sides"]
    assert set(left) == {"relation", "keys", "bucketed", "shuffle", "reasons", "sort"}
    assert left == {
        "relation": f"{project.schema}.fact",
        "keys": ["k"],
        "bucketed": True,
        "shuffle": True,
        "reasons": ["BUCKET_COUNT_MISMATCH"],
        "sort": "needed",
    }
    # The manifest does not know dim16's files: whether its scan comes sorted is not judged.
    assert right["relation"] == f"{project.schema}.dim16" and right["shuffle"] is False and right["sort"] is None
    (agg,) = by_model["model.sb_it.grouped"]
    assert agg["kind"] == "aggregate" and agg["shuffle_free"] is True and agg["line"] == 3
    hive = by_model["model.sb_it.hive_join"][0]
    assert hive["sides"][0]["reasons"] == ["HIVE_HASH_NOT_USED_BY_SPARK"]
    assert any("bucket_hash='spark'" in s for s in hive["suggestions"])


def test_bad_input_gives_unknown_findings_not_crashes(project, tmp_path):
    code, out, _ = _check(project, "--no-compile", "--format", "json", "--select", "broken_sql", "unknown_rel")
    assert code == 0
    by_model = {m["model"]: m["findings"] for m in json.loads(out)["models"]}
    (broken,) = by_model["model.sb_it.broken_sql"]
    assert broken["unknown"] is True and broken["kind"] == "query"
    assert "could not parse the compiled SQL" in broken["suggestions"][0]
    (unknown,) = by_model["model.sb_it.unknown_rel"]
    assert unknown["unknown"] is True and unknown["shuffle_free"] is False
    assert unknown["sides"][1]["reasons"] == ["UNKNOWN_RELATION"]

    code, _, err = _check(project, "--no-compile", "--verify", "--thrift", "127.0.0.1:1")
    assert code == 2 and "127.0.0.1" in err

    (tmp_path / "dbt_project.yml").write_text("name: empty\n")
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = cli.main(["check", "--project-dir", str(tmp_path), "--no-compile"])
    assert code == 2
    assert "no dbt manifest at" in err.getvalue() and "dbt compile" in err.getvalue()


def test_unknown_is_unknown_never_not_bucketed(project):
    """A source whose bucketing nothing states, and a relation the live
    catalog cannot find, are unknown; --fail-on treats unknown on its own."""
    code, out, _ = _check(project, "--no-compile", "--format", "json", "--select", "source_join", "unknown_rel")
    assert code == 0
    by_model = {m["model"]: m["findings"] for m in json.loads(out)["models"]}
    (join,) = by_model["model.sb_it.source_join"]
    assert join["unknown"] is True and join["sides"][1]["reasons"] == ["UNKNOWN_BUCKETING"]
    assert any("meta.spark_bucketing" in s for s in join["suggestions"])
    for fail_on, want in (("shuffle", 0), ("unknown", 1)):
        code, _, _ = _check(project, "--no-compile", "--select", "source_join", "--fail-on", fail_on)
        assert code == want, fail_on

    # The live catalog (the project's own dbt target) knows the source: bucketed like fact, no shuffle.
    code, out, _ = _check(
        project, "--no-compile", "--format", "json", "--catalog", "live", "--select", "source_join", "unknown_rel"
    )
    by_model = {m["model"]: m["findings"] for m in json.loads(out)["models"]}
    (join,) = by_model["model.sb_it.source_join"]
    assert join["shuffle_free"] is True and not join.get("unknown"), join
    (missing,) = by_model["model.sb_it.unknown_rel"]
    assert missing["unknown"] is True and missing["sides"][1]["reasons"] == ["UNKNOWN_RELATION"]
    code, _, _ = _check(project, "--no-compile", "--catalog", "live", "--select", "unknown_rel", "--fail-on", "unknown")
    assert code == 1


def test_a_wrong_dbt_target_is_an_error_not_a_verdict(project):
    code, _, err = _check(project, "--no-compile", "--catalog", "live", "--target", "nope")
    assert code == 2 and "cannot load the dbt profile" in err and "nope" in err


def test_verify_against_the_built_tables_and_live_catalog(project):
    code, out, _ = _check(
        project,
        "--no-compile",
        "--format",
        "json",
        "--verify",
        "--catalog",
        "live",
        "--select",
        "good_join",
        "bad_join",
        "hive_join",
        "grouped",
    )
    assert code == 0
    findings = [f for m in json.loads(out)["models"] for f in m["findings"]]
    assert len(findings) == 4
    assert all(f["verified"] is True for f in findings), findings
    code, out, _ = _check(project, "--no-compile", "--verify", "--select", "bad_join")
    assert "[plan agrees]" in out


def test_live_verdicts_are_the_plans(project, monkeypatch):
    """--catalog live: every verdict is Spark's plan's. What the static model got wrong is kept beside
    it and counted, what only the plan has becomes a finding, and a model Spark cannot plan keeps the
    static verdicts, marked so."""
    from spark_bucketing.checker import project as checker_project

    static = checker_project.analyze_sql

    def wrong_on_distinct(code, catalog, settings):
        """The static model, wrong on purpose on the DISTINCT over the UNION, and missing the aggregation by
        (k, v) under COUNT(DISTINCT v) (it gets both shapes right)."""
        findings = static(code, catalog, settings)
        for f in findings:
            if f.kind == "distinct" and "union all" in code:
                f.sides[0].shuffle, f.sides[0].reasons = True, ["UNION"]
        return [f for f in findings if "count(distinct" not in code or sorted(f.sides[0].local_keys) != ["k", "v"]]

    monkeypatch.setattr(checker_project, "analyze_sql", wrong_on_distinct)
    models = ["good_join", "pruned_agg", "outer_then_join", "union_distinct", "distinct_count", "unknown_rel"]
    code, out, _ = _check(project, "--no-compile", "--format", "json", "--catalog", "live", "--select", *models)
    assert code == 0
    data = json.loads(out)
    by_model = {m["model"].rsplit(".", 1)[1]: m for m in data["models"]}

    (good,) = by_model["good_join"]["findings"]
    assert good["verdict_from"] == "plan" and good["verified"] is True and good["shuffle_free"] is True
    assert "static_verdict" not in good and "not_planned" not in by_model["good_join"]

    # The plan reads 1 of fact's 8 buckets through the aggregate, as the static model says.
    (lookup,) = [f for f in by_model["pruned_agg"]["findings"] if f["kind"] == "lookup"]
    # Line 3 of the compiled SQL (the config block leaves line 1 empty) holds the filter.
    assert (lookup["buckets_read"], lookup["buckets"]) == (1, 8) and lookup["line"] == 3
    assert lookup["verdict_from"] == "plan" and lookup["verified"] is True and "static_verdict" not in lookup

    first, second = by_model["outer_then_join"]["findings"]
    assert first["verified"] is True and "static_verdict" not in first
    assert second["verified"] is True and "static_verdict" not in second and second["plan_shuffles"] == [False, True]
    assert [s["shuffle"] for s in second["sides"]] == [False, True]
    assert second["sides"][0]["reasons"] == [] and second["sides"][1]["reasons"] == ["NOT_BUCKETED"]

    # The static model (made wrong) shuffles for the DISTINCT over the UNION; the plan does not, and its
    # verdict stands.
    (distinct,) = by_model["union_distinct"]["findings"]
    assert distinct["static_verdict"]["shuffles"] == [True] and distinct["static_verdict"]["reasons"] == [["UNION"]]
    assert distinct["verified"] is False and [s["shuffle"] for s in distinct["sides"]] == [False]
    assert distinct["sides"][0]["reasons"] == []

    # The aggregation by (k, v) under COUNT(DISTINCT v) is only in the plan: it becomes a finding.
    planned = [f for f in by_model["distinct_count"]["findings"] if f.get("static_verdict") == {"absent": True}]
    assert len(planned) == 1, by_model["distinct_count"]
    (only,) = planned
    assert only["kind"] == "aggregate" and only["sides"][0]["keys"] == ["k", "v"] and only["line"] == 2
    assert only["verdict_from"] == "plan" and only["shuffle_free"] is True

    missing = by_model["unknown_rel"]
    assert "not_there" in missing["not_planned"].lower() or "not found" in missing["not_planned"].lower(), missing
    assert all(f["verdict_from"] == "static" and f["unknown"] for f in missing["findings"])
    assert data["static_disagreements"] == 2  # the DISTINCT's shuffle and the aggregation only the plan has

    code, out, _ = _check(project, "--no-compile", "--catalog", "live", "--select", *models)
    assert "[from the plan: the static model said otherwise]" in out and "[plan agrees]" in out
    assert "not planned, static verdicts" in out and "[from the plan: the static model has no finding here]" in out
    assert "--catalog live: 5 of 6 models planned by Spark" in out


def test_trino_engine(project):
    code, out, _ = _check(
        project, "--no-compile", "--format", "json", "--engine", "trino", "--select", "hive_join", "good_join"
    )
    by_model = {m["model"]: m["findings"] for m in json.loads(out)["models"]}
    # 16 vs 8 Hive buckets: a power-of-two multiple, so Trino co-locates them.
    assert by_model["model.sb_it.hive_join"][0]["shuffle_free"] is True
    good = by_model["model.sb_it.good_join"][0]
    assert good["shuffle_free"] is False
    assert good["sides"][0]["reasons"] == ["SPARK_HASH_NOT_USED_BY_TRINO"]


def test_trino_reads_the_tables_of_incremental_models_bucketed(project):
    """A partitioned bucketed_incremental table keeps each replaced partition's bucket spec in the metastore, with
    or without the session extension (tests/test_trino.py reads such tables; tests/test_incremental_failures.py
    shows the spec written back): Trino's report has no warning of them, and the routed model's table joins
    without a shuffle (Hive's hash, as the package builds it)."""
    args = ("--no-compile", "--engine", "trino", "--select", "daily_join", "routed_join", "hive_join")
    code, out, _ = _check(project, *args, "--format", "json", "--fail-on", "shuffle")
    assert code == 0, out
    report = json.loads(out)
    assert "warnings" not in report
    by_model = {m["model"].rsplit(".", 1)[1]: m["findings"] for m in report["models"]}
    assert [f["shuffle_free"] for f in by_model["routed_join"]] == [True], by_model["routed_join"]


def test_sqlfluff_rule_flags_the_join_line_of_a_dbt_model(project):
    from sqlfluff.core import FluffConfig, Linter

    config = FluffConfig(
        overrides={"dialect": "sparksql", "rules": "SB01", "templater": "jinja"},
        configs={"templater": {"jinja": {"apply_dbt_builtins": True}}},
    )
    linter = Linter(config=config)
    bad = linter.lint_path(str(project.root / "models" / "bad_join.sql"))
    violations = [v for f in bad.files for v in f.get_violations()]
    assert [v.rule_code() for v in violations] == ["SB01"]
    assert violations[0].line_no == 5  # the JOIN's line in the model source (config line included)
    assert "BUCKET_COUNT_MISMATCH" in violations[0].desc()
    good = linter.lint_path(str(project.root / "models" / "good_join.sql"))
    assert [v for f in good.files for v in f.get_violations()] == []


def test_sqlfluff_rule_under_the_dbt_templater(project, monkeypatch):
    """What dbt users run: sqlfluff-templater-dbt renders the model through
    dbt (refs become schema-qualified relations), and SB01 still flags the
    JOIN line. The templater's settings live in the project's .sqlfluff, as
    users keep them (sqlfluff reads per-file config from files)."""
    from sqlfluff.core import FluffConfig, Linter
    from sqlfluff.core.config.loader import load_config_at_path

    (project.root / ".sqlfluff").write_text(
        "[sqlfluff]\ndialect = sparksql\ntemplater = dbt\nrules = SB01\n\n"
        "[sqlfluff:templater:dbt]\nproject_dir = .\nprofiles_dir = .\n"
    )
    monkeypatch.chdir(project.root)  # sqlfluff reads .sqlfluff files from here down to each file
    # ...and caches each folder's, which the jinja test above already read (without this file).
    load_config_at_path.cache_clear()
    try:
        linter = Linter(config=FluffConfig.from_root())
        bad = linter.lint_paths(("models/bad_join.sql",))
        violations = bad.get_violations()
        assert [v.rule_code() for v in violations] == ["SB01"], [v.desc() for v in violations]
        assert violations[0].line_no == 5
        assert "BUCKET_COUNT_MISMATCH" in violations[0].desc()
        good = linter.lint_paths(("models/good_join.sql",))
        assert good.get_violations() == []
    finally:
        (project.root / ".sqlfluff").unlink()
        load_config_at_path.cache_clear()


def test_the_gate_fails_a_table_the_project_declares_bucketed_that_the_catalog_reads_unbucketed(project, spark):
    """A model declared bucketed (8 buckets on k, Spark's hash) whose table another tool rewrote unbucketed (as
    after on_bucket_change='evolve' the table is declared unbucketed): its join with `dim` shuffles in Spark's
    plan. The live catalog says it is not bucketed, so the join was not "between bucketed relations" and the
    gate passed (issue 83); it fails now, and the advice is the repair, not "materialize it bucketed"."""
    schema = project.schema
    project.write_model("rewritten", "select 1 as k", {"materialized": "bucketed_table", **TABLES["fact"]})
    (project.root / "models" / "rewritten_join.sql").write_text(
        "{{ config(materialized='view') }}\nselect r.k, d.v from {{ ref('rewritten') }} r\njoin {{ ref('dim') }} d"
        " on r.k = d.k\n"
    )
    spark.sql(f"create table {schema}.rewritten using parquet as select cast(id as int) as k from range(100)")
    try:
        code, out, err = _check(project, "--catalog", "live", "--select", "rewritten_join", "--fail-on", "shuffle")
        assert code == 1, out + err
        assert "model.sb_it.rewritten_join line 3: a join between bucketed relations shuffles" in err
        assert "1 joins between bucketed relations shuffle" in out
        assert f"{schema}.rewritten is declared 8 buckets on (k), spark hash by the project, but the catalog" in out
        assert "`dbt run --select rewritten --full-refresh`" in out and "materialize" not in out
    finally:
        spark.sql(f"drop table if exists {schema}.rewritten")
        project.remove_model("rewritten")
        project.remove_model("rewritten_join")
        assert project.dbt("compile").success


def test_the_gate_fails_when_it_checked_fewer_models_than_selected(project):
    """With --fail-on, a selected model the check could not judge fails the gate unless --allow-unchecked: a
    manifest another command wrote (`dbt test`: no model's compiled code), a model Spark cannot plan. Both
    exited 0 (issue 83), a gate that checked nothing passing."""
    try:
        assert project.dbt("test", "--select", "good_join", "--write-json").success
        code, out, err = _check(project, "--no-compile", "--select", "good_join", "--fail-on", "shuffle")
        assert code == 1, out + err
        assert "model.sb_it.good_join: not checked: the model has no compiled code in" in err
        assert "(a manifest written by a command that did not compile it, such as `dbt test`" in err
        code, _, _ = _check(
            project, "--no-compile", "--select", "good_join", "--fail-on", "shuffle", "--allow-unchecked"
        )
        assert code == 0
        code, _, _ = _check(project, "--no-compile", "--select", "good_join")  # no gate: the report alone
        assert code == 0
    finally:
        assert project.dbt("compile").success
    code, _, err = _check(
        project, "--no-compile", "--catalog", "live", "--select", "unknown_rel", "--fail-on", "shuffle"
    )
    assert code == 1 and "model.sb_it.unknown_rel: not checked: Spark could not plan it" in err
    args = ("--no-compile", "--catalog", "live", "--select", "unknown_rel", "--fail-on", "shuffle", "--allow-unchecked")
    assert _check(project, *args)[0] == 0


def test_rough_edges(project, tmp_path, monkeypatch):
    """No project: a clear error. --no-compile with no manifest: the error before any Spark starts (it started
    one, about 20 s, first). (Issue 83.)"""
    code, _, err = _check(project, "--project-dir", str(tmp_path))
    assert code == 2 and f"no dbt_project.yml in {tmp_path}" in err and "Errno" not in err
    (tmp_path / "dbt_project.yml").write_text("name: empty\n")
    started = []
    monkeypatch.setattr("spark_bucketing.connection.connect", lambda *a, **k: started.append(1))
    code, _, err = _check(project, "--project-dir", str(tmp_path), "--no-compile", "--catalog", "live")
    assert code == 2 and "no dbt manifest at" in err and started == []
