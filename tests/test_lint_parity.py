"""Rule SB01 reports what `spark-bucketing check --fail-on shuffle` fails on (issue 83): one rule core
(checker/gate.py). On the checker corpus (its tables as a dbt manifest: sources whose meta states each
table's spec, in the frozen catalog's types) sqlfluff lints every query with SB01 under the query's settings,
and the lines it flags are the lines of the findings the gate counts for the same query and catalog. No JVM."""

from __future__ import annotations

import json

import pytest
from sqlfluff.core import FluffConfig, Linter

from spark_bucketing.checker import EngineSettings, analyze_sql
from spark_bucketing.checker.gate import lost_bucket_join
from spark_bucketing.checker.relations import catalog_from_manifest_file
from tests.support.checker_corpus import CORPUS, FROZEN, S

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)


def _manifest(tmp_path) -> tuple[str, dict]:
    """The corpus's tables as a manifest (its path), and the session the corpus was frozen under."""
    frozen = json.loads(FROZEN.read_text())
    nodes = {}
    for name, r in frozen["catalog"].items():
        schema, table = name.split(".")
        node = {
            "relation_name": f"`{schema}`.`{table}`",
            "columns": {c: {"data_type": t} for c, t in r["columns"].items()},
        }
        if r["bucket"]:  # a source's meta states its spec, Hive's hash included
            nodes[f"source.corpus.{schema}.{table}"] = {
                **node,
                "resource_type": "source",
                "config": {},
                "meta": {"spark_bucketing": r["bucket"]},
            }
        else:  # a table model's config says it is not bucketed
            nodes[f"model.corpus.{table}"] = {**node, "resource_type": "model", "config": {"materialized": "table"}}
    path = tmp_path / "manifest.json"
    path.write_text(json.dumps({"nodes": {}, "sources": nodes}))
    return str(path), frozen["session"]


def test_sb01_flags_exactly_what_the_gate_fails_on(tmp_path):
    manifest, session = _manifest(tmp_path)
    catalog = catalog_from_manifest_file(tmp_path / "manifest.json")
    flagged, linted = 0, 0
    for name, conf, template in CORPUS:
        sql = template.format(S=S) + "\n"
        settings = EngineSettings("spark", {**session, **conf})
        expected = sorted(f.line for f in analyze_sql(sql, catalog, settings) if lost_bucket_join(f, catalog, settings))
        config = FluffConfig(
            configs={
                "core": {"dialect": "sparksql", "rules": "bucketing.shuffle"},
                "rules": {
                    "bucketing.shuffle": {
                        "manifest": manifest,
                        "spark_conf": ",".join(f"{k}={v}" for k, v in {**session, **conf}.items()),
                    }
                },
            }
        )
        result = Linter(config=config).lint_string(sql)
        if any(v.rule_code() == "PRS" for v in result.get_violations()):
            continue  # sqlfluff's dialect cannot parse it: SB01 never runs on it
        linted += 1
        lines = sorted(v.line_no for v in result.get_violations() if v.rule_code() == "SB01")
        assert lines == expected, (name, lines, expected)
        flagged += bool(lines)
    assert linted >= 0.8 * len(CORPUS), linted
    assert flagged >= 10, flagged  # the corpus holds lost bucket joins, and SB01 finds them
