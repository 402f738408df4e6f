"""Rule SB01 flags, at the JOIN's line, a join between two
bucketed relations that will shuffle, using the same checker and the same
rule as `spark-bucketing check --fail-on shuffle` (checker/gate.py).

Bucket specs come from a dbt manifest: `manifest` in the rule's config,
else target/manifest.json of the nearest dbt project above the linted file.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from sqlfluff.core.rules import BaseRule, LintResult, RuleContext
from sqlfluff.core.rules.crawlers import RootOnlyCrawler

from spark_bucketing.checker import EngineSettings, analyze_sql
from spark_bucketing.checker.gate import lost_bucket_join
from spark_bucketing.checker.relations import Catalog, catalog_from_manifest_file


@lru_cache(maxsize=8)
def _catalog(manifest: str, mtime: float) -> Catalog:
    return catalog_from_manifest_file(Path(manifest))


def _find_manifest(start: Path, configured: str) -> Path | None:
    if configured:
        path = Path(configured)
        return path if path.exists() else None
    for folder in [start, *start.parents]:
        if (folder / "dbt_project.yml").exists():
            candidate = folder / "target" / "manifest.json"
            return candidate if candidate.exists() else None
    return None


class Rule_SB01(BaseRule):
    """A join between bucketed relations that will shuffle.

    **Anti-pattern**

    Joining two bucketed tables whose bucket specs do not line up (bucket
    counts, key columns, key types, hash family, an expression on the key):
    the engine shuffles both or one side, and the bucketing buys nothing.

    **Best practice**

    Follow the suggestion in the message (it names the change), or run
    ``spark-bucketing check`` for the full report.
    """

    name = "bucketing.shuffle"
    groups = ("all", "bucketing")
    crawl_behaviour = RootOnlyCrawler()
    config_keywords = ["manifest", "engine", "spark_conf"]
    is_fix_compatible = False

    def _eval(self, context: RuleContext) -> list[LintResult]:
        templated = context.templated_file
        if templated is None:
            return []
        fname = Path(templated.fname) if templated.fname else Path.cwd()
        manifest = _find_manifest(fname.resolve().parent, (self.manifest or "").strip())
        if manifest is None:
            return []
        catalog = _catalog(str(manifest), manifest.stat().st_mtime)
        conf = dict(item.split("=", 1) for item in (self.spark_conf or "").split(",") if "=" in item)
        settings = EngineSettings(self.engine or "spark", conf)
        findings = analyze_sql(templated.templated_str, catalog, settings)
        results = []
        segments = [s for s in context.segment.raw_segments if s.is_code and s.pos_marker]
        for f in findings:
            if not lost_bucket_join(f, catalog, settings):  # what `check --fail-on shuffle` fails on
                continue
            anchor = next((s for s in segments if s.pos_marker.templated_position()[0] == f.line), None)
            if anchor is None:
                anchor = context.segment
            sides = "; ".join(
                f"{s.relation} ({', '.join(s.keys)}) {'shuffled: ' + ', '.join(s.reasons) if s.shuffle else 'kept'}"
                for s in f.sides
            )
            fix = f" Fix: {f.suggestions[0]}" if f.suggestions else ""
            results.append(
                LintResult(anchor=anchor, description=f"Join between bucketed relations shuffles: {sides}.{fix}")
            )
        return results
