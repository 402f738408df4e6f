"""The sqlfluff rule reads the manifest its `manifest` setting names, in any
folder (it used to read <that folder>/../target/manifest.json). No JVM."""

from __future__ import annotations

import json

from sqlfluff.core import FluffConfig, Linter

SQL = "select a.user_id from s.a as a join s.b as b on a.user_id = b.user_id\n"


def _model(name: str, buckets: int, bucket_hash: str = "spark") -> dict:
    return {
        "resource_type": "model",
        "relation_name": f"`s`.`{name}`",
        "config": {
            "materialized": "bucketed_table",
            "clustered_by": ["user_id"],
            "buckets": buckets,
            "bucket_hash": bucket_hash,
        },
        "columns": {"user_id": {"data_type": "int"}},
    }


def _lint(manifest: str) -> list:
    config = FluffConfig(
        configs={
            "core": {"dialect": "sparksql", "rules": "bucketing.shuffle"},
            "rules": {"bucketing.shuffle": {"manifest": manifest}},
        }
    )
    return Linter(config=config).lint_string(SQL).get_violations()


def test_a_manifest_outside_a_target_folder_is_read(tmp_path):
    manifest = tmp_path / "elsewhere" / "my_manifest.json"
    manifest.parent.mkdir()
    manifest.write_text(
        json.dumps({"nodes": {"model.p.a": _model("a", 8), "model.p.b": _model("b", 16)}, "sources": {}})
    )
    violations = _lint(str(manifest))
    assert [v.rule_code() for v in violations] == ["SB01"]
    assert "BUCKET_COUNT_MISMATCH" in violations[0].desc()


def test_equal_bucket_counts_are_not_flagged(tmp_path):
    manifest = tmp_path / "m.json"
    manifest.write_text(
        json.dumps({"nodes": {"model.p.a": _model("a", 8), "model.p.b": _model("b", 8)}, "sources": {}})
    )
    assert _lint(str(manifest)) == []


def test_a_hive_hash_table_joined_to_a_spark_hash_one_is_flagged(tmp_path):
    """As `check --fail-on shuffle` fails it (issue 83): the Spark-hash side's buckets are lost, and the one fix
    that works is named (the extension reads the Hive side by Hive's hash, still not the other side's)."""
    manifest = tmp_path / "m.json"
    nodes = {"model.p.a": _model("a", 8, "hive"), "model.p.b": _model("b", 8)}
    manifest.write_text(json.dumps({"nodes": nodes, "sources": {}}))
    (violation,) = _lint(str(manifest))
    assert violation.rule_code() == "SB01" and "HIVE_HASH" in violation.desc()
    assert "set bucket_hash='spark' on its model" in violation.desc() and "enable the session" not in violation.desc()
    # Two Hive-hash tables joined in Spark without the extension shuffle by design: their buckets are Hive's.
    nodes = {"model.p.a": _model("a", 8, "hive"), "model.p.b": _model("b", 8, "hive")}
    manifest.write_text(json.dumps({"nodes": nodes, "sources": {}}))
    assert _lint(str(manifest)) == []
