"""The sqlfluff rule reads the manifest its `manifest` setting names, in any
folder (it used to read <that folder>/../target/manifest.json). No JVM."""

from __future__ import annotations

import json

from sqlfluff.core import FluffConfig, Linter

SQL = "select a.user_id from s.a as a join s.b as b on a.user_id = b.user_id\n"


def _model(name: str, buckets: int) -> dict:
    return {
        "resource_type": "model",
        "relation_name": f"`s`.`{name}`",
        "config": {
            "materialized": "bucketed_table",
            "clustered_by": ["user_id"],
            "buckets": buckets,
            "bucket_hash": "spark",
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
