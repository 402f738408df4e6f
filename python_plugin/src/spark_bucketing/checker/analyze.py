"""Static analysis of a compiled query: every join, GROUP BY, DISTINCT and
window PARTITION BY, resolved through CTEs, subqueries, aliases and USING to
base relations, and judged by an engine model (engines.py); and every lookup
on a bucketed table's bucket column.

In passes, as sqlglot's optimizer is built: parse and qualify the columns,
remove the casts Spark's analyzer removes, walk the scopes once into query blocks (blocks.py), then the scans'
partitioning (scans.py), joins and groupings (flow.py), lookups (lookups.py)
and the findings in query order."""

from __future__ import annotations

import re
from dataclasses import replace

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.annotate_types import annotate_types
from sqlglot.optimizer.qualify import qualify

from spark_bucketing.checker.advice import GUESS, refine
from spark_bucketing.checker.blocks import walk
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.flow import join_and_grouping_findings
from spark_bucketing.checker.lookups import lookup_findings
from spark_bucketing.checker.model import Finding
from spark_bucketing.checker.proven import keep_proven_settings
from spark_bucketing.checker.relations import Catalog
from spark_bucketing.checker.scans import scan_outputs

# input_file_name() and its kin: the extension merges no bucket's files in a plan that asks for them.
_FILE_NAMES = re.compile(r"\binput_file_(?:name|block_start|block_length)\s*\(", re.IGNORECASE)


def analyze_sql(
    sql: str, catalog: Catalog, settings: EngineSettings | None = None, prove: bool = True
) -> list[Finding]:
    """Findings for one compiled query, in query order. `prove`: each setting a
    suggestion offers is kept only where the query analysed with it loses that
    shuffle (proven.py)."""
    settings = settings or EngineSettings()
    if _FILE_NAMES.search(sql):
        settings = settings.without_merged_files()
    qualified = _qualified(sql, catalog)
    if isinstance(qualified, Finding):
        return [qualified]
    try:
        # Trino's planner keeps such a cast, and a key under it is not the bucket column there.
        query = walk(_without_redundant_casts(qualified, catalog) if settings.engine == "spark" else qualified)
        if query is None:
            return []
        lookups = lookup_findings(query, catalog, settings)
        scans = scan_outputs(query, catalog, settings, lookups.scan_filters)
        for table in lookups.never_true:
            scans[table] = replace(scans[table], empty=True)
        findings, vanished = join_and_grouping_findings(
            query, scans, settings, lookups.crossed_types, lookups.widened, lookups.emptied_sources
        )
        findings += [f for table, f in lookups.findings.items() if table not in vanished]
    except Exception as err:  # a query the passes do not handle: its verdict is unknown, the others still reported
        why = f"the checker could not analyse this query ({type(err).__name__}: {err}); please report it with the query"
        return [Finding("query", 1, [], [why], unknown=True)]
    findings = _in_query_order(findings)
    refine(findings, catalog)
    if prove:
        keep_proven_settings(findings, settings, lambda other: analyze_sql(sql, catalog, other, prove=False))
    return findings


def _qualified(sql: str, catalog: Catalog) -> exp.Expression | Finding:
    """The query with every column qualified by its source, or a finding saying why it cannot be read."""
    try:
        parsed = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError as err:
        line = (err.errors[0].get("line") if err.errors else None) or 1
        why = err.errors[0]["description"] if err.errors else err
        return Finding("query", int(line), [], [f"could not parse the compiled SQL: {why}"], unknown=True)
    try:
        return qualify(
            parsed.copy(),
            dialect="spark",
            schema=catalog.sqlglot_schema(),
            validate_qualify_columns=False,
            identify=False,
        )
    except Exception:  # sqlglot raises several kinds on SQL it cannot resolve with the schema
        try:
            return qualify(parsed, dialect="spark", validate_qualify_columns=False, identify=False)
        except Exception as err:
            return Finding("query", 1, [], [f"could not resolve the query's columns: {err}"], unknown=True)


def _without_redundant_casts(query: exp.Expression, catalog: Catalog) -> exp.Expression:
    """The query with each cast of a column to the type it has removed, as Spark's analyzer removes it: a
    bucket column cast to its own type is still the bucket column."""
    if not any(isinstance(c.this, exp.Column) for c in query.find_all(exp.Cast)):
        return query  # typing the query costs more than the rest of its analysis
    typed = annotate_types(query, schema=catalog.sqlglot_schema(), dialect="spark")

    def unwrap(e: exp.Expression) -> exp.Expression:
        if isinstance(e, exp.Cast) and isinstance(e.this, exp.Column) and e.this.type is not None:
            known = e.this.type
            if not known.is_type(exp.DataType.Type.UNKNOWN) and known.sql("spark") == e.to.sql("spark"):
                return e.this
        return e

    return typed.transform(unwrap, copy=False)


def _in_query_order(findings: list[Finding]) -> list[Finding]:
    for f in findings:
        if f.unknown and not any("not in the catalog" in s or "the verdict is unknown" in s for s in f.suggestions):
            f.suggestions.append(GUESS)
    return sorted(findings, key=lambda f: f.line)
