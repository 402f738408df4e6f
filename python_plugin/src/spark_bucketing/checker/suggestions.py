"""What to change, per reason a side shuffles."""

from __future__ import annotations

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Finding, Part
from spark_bucketing.contracts import CLONE_RATIO_SETTING, SORT_ORDERING_SETTING, SUPERSET_KEYS_SWITCH


def suggestions(finding: Finding, settings: EngineSettings, left: Part | None, right: Part | None) -> list[str]:
    out = []
    for i, side in enumerate(finding.sides):
        if not side.shuffle:
            continue
        rel = side.relation or "this side"
        keys = ", ".join(side.keys)
        other = (right if i == 0 else left) if finding.kind == "join" else None
        for r in side.reasons:
            text = {
                # The extension would read this side by Hive's hash: still not a Spark-hash other side's.
                E.HIVE_HASH: f"{rel} uses Hive's hash and the other side Spark's, and two hash families never join "
                f"bucket by bucket (the session extension reads {rel} bucketed, by Hive's hash): set "
                "bucket_hash='spark' on its model (Hive and Trino then read it unbucketed)"
                if other is not None and other.bucketed and other.hash == "spark"
                else f"{rel} uses Hive's hash, which stock Spark never reads as bucketed: enable the "
                "session extension (spark-bucketing extension; for a table this package did not build, with "
                "spark_bucketing.extension.foreignTables=true), or set bucket_hash='spark' on its model if Spark is "
                "the reader that matters (Hive/Trino then read it unbucketed)",
                E.FOREIGN_TABLE: f"{rel} was not built by this package: SET spark_bucketing.extension.foreignTables"
                "=true to read it bucketed (each row checked against its file's bucket as it is read)",
                E.HASH_DIFFERS: "the two sides place rows by different hashes (Hive's v1 or v2, or Spark's): build "
                "both with the same bucket_hash and bucketing_version",
                E.HIVE_V2_FLOAT_KEY: f"{rel} is bucketed by Hive's v2 hash on a floating-point column, which puts -0.0 "
                "and 0.0 in different buckets while Spark joins them as one key, so the extension reads it unbucketed: "
                "bucket it by another column, or with bucketing_version=1",
                E.HIVE_KEY_TYPE: f"{rel} is bucketed by Hive's hash on a column type the extension does not hash as "
                "Hive does (char, varchar, binary; for bucketing_version 2 also decimal and timestamp), so it reads "
                "the table unbucketed, as stock Spark does: bucket it by a column of another type",
                E.SPARK_HASH_IN_TRINO: f"{rel} uses Spark's hash, which Trino reads as unbucketed: "
                "set bucket_hash='hive' if Trino is the reader that matters",
                E.NOT_BUCKETED: not_bucketed_text(rel, side.keys, (left or right).num if (left or right) else None)
                + _hash_clause(other, settings),
                E.KEYS_NOT_BUCKET_COLUMNS: f"join or group {rel} on its bucket columns, or bucket it by ({keys})",
                E.KEYS_SUPERSET: f"join or group on exactly the bucket columns of {rel}: Trino exchanges the rows "
                "for any key beyond them"
                if settings.engine == "trino"
                else f"join on exactly the bucket columns of {rel}, or set "
                "spark.sql.requireAllClusterKeysForCoPartition=false" + _superset_hint(settings, left, right),
                E.KEYS_FIXED_BY_LITERAL: f"a filter fixes the join keys to one value, so Trino joins without them and "
                f"copies {rel}'s rows of that value to every task: no bucketing removes that copy; it is no larger "
                "than those rows",
                E.KEY_POSITIONS: "write the join conditions in the order of the bucket columns"
                if settings.engine == "trino"
                else "bucket both sides by the join keys in the same order",
                E.KEY_CAST: f"join on the column itself, not a cast of it: give {rel}'s key the other side's type "
                "in the model that builds it",
                E.KEY_EXPRESSION: "join on a plain bucket column, not an expression: compute the value in an "
                "upstream model and bucket that model by it",
                E.KEY_TYPE_MISMATCH: f"the key types differ, so Spark casts {rel}'s key: build both with the same type",
                E.UNION: "a UNION loses bucketing: join each branch separately, or materialize the union as a "
                "bucketed table",
                E.AGGREGATE: "an aggregation on other columns loses bucketing: group by the bucket columns, or "
                "bucket the aggregated model",
                E.DISTINCT_EXPAND: "aggregates of DISTINCT over different columns make Spark copy each row once per "
                "list (an Expand), which loses the bucketing: aggregate one DISTINCT list per query block (one CTE "
                "each, grouped by the same keys) and join them on those keys",
                E.EMPTY_SUBQUERY: "no row passes this IN/EXISTS subquery's filters (literals that contradict each "
                "other or lie past the column's range): Spark reads nothing for it but still shuffles the other side "
                "for the join; remove the subquery, or fix its filters",
                E.BUCKET_COUNT_MISMATCH: "give both tables the same bucket count"
                + _coalescing_hint(settings, left, right),
                E.BUCKETING_DISABLED: "spark.sql.sources.bucketing.enabled is false",
                E.MIXED_PARTITION_SPECS: f"the partitions of {rel} this query reads were written with different "
                "bucket specs: backfill them with one spec"
                + (
                    ", or filter to partitions that share one (the extension reads those bucketed)"
                    if settings.extension
                    else ""
                ),
                E.EVOLVING_TABLE: f"{rel} is declared unbucketed while its partitions' specs differ: the "
                "partitions this query reads share one spec, but stock engines use the table's declaration; "
                "backfill the older partitions (or drop them) so the table converges, or enable the session "
                "extension (spark-bucketing extension), which reads them by the spec they share",
                E.UNKNOWN_RELATION: f"{rel} is not in the catalog: build it (`dbt run`), declare it as a dbt "
                "model or source, or check its name",
                E.UNKNOWN_BUCKETING: f"nothing states how {rel} is bucketed: declare it in the source's "
                "meta.spark_bucketing, or use --catalog live",
            }.get(r)
            if text and text not in out:
                out.append(text)
    skippable = [s.relation or "a side" for s in finding.sides if s.sort == "skippable"]
    if skippable:
        out.append(
            f"{' and '.join(skippable)} is read one file per bucket in sorted_by order: set "
            f"{SORT_ORDERING_SETTING}=true and the sort-merge join skips its Sort"
        )
    return out


def _hash_clause(other: Part | None, settings: EngineSettings) -> str:
    """The hash family a table bucketed on the suggestion's keys must use to be read bucketed here: the
    other side's where it is a bucketed read (Hive's only with the extension), else Spark's where the
    extension is off (the package's default, Hive's hash, is read unbucketed by stock Spark)."""
    if other is not None and other.bucketed:
        if other.hash == "spark":
            return ", bucket_hash='spark'"
        return ", bucket_hash='hive'" + (", bucketing_version=2" if other.hash == "hive v2" else "")
    return "" if settings.extension else ", bucket_hash='spark'"


def not_bucketed_text(relation: str, keys: list[str], buckets: int | None) -> str:
    """The NOT_BUCKETED suggestion; advice.py finds it by this text (without the count) to refine it."""
    return f"materialize {relation} with bucketed_table, clustered_by=[{', '.join(keys)}]" + (
        f", buckets={buckets}" if buckets else ""
    )


def _superset_hint(settings: EngineSettings, left: Part | None, right: Part | None) -> str:
    """How the extension would keep both sides: only two scans of tables this package built (SupersetKeyJoins)."""
    if settings.superset_join_keys or not all(p and p.scan and p.package for p in (left, right)):
        return ""
    if not settings.extension:
        return ", or enable the session extension: it joins two tables this package built bucket by bucket"
    if not settings.adaptive:
        return (
            ", or turn spark.sql.adaptive.enabled back on: the extension then joins two tables this package built "
            "bucket by bucket"
        )
    return f", or set {SUPERSET_KEYS_SWITCH}=true where the bucket columns are not skewed"


def _coalescing_hint(settings: EngineSettings, left: Part | None, right: Part | None) -> str:
    """The other ways to join two bucket counts, each offered only where it works: a setting only where these
    two counts qualify for it, else the counts that would."""
    ratio = settings.max_bucket_ratio
    # Coalescing and cloning take two bucketed scans: a join's or an aggregate's output is neither.
    scans = [p for p in (left, right) if p is not None and p.bucketed and p.scan]
    counts = sorted(p.num for p in scans)
    lo, hi = (counts[0], counts[-1]) if len(counts) == 2 else (None, None)
    if settings.extension:
        adaptive = EngineSettings(settings.engine, {**settings.conf, "spark.sql.adaptive.enabled": "true"})
        if not settings.adaptive and lo and E.joined_count(lo, hi, True, "spark", adaptive) is not None:
            return (
                f", or turn spark.sql.adaptive.enabled back on: the extension then joins {lo} and {hi} buckets"
                " (a common divisor, or one a multiple of the other)"
            )
        return (
            f", or counts with a common divisor g each at most {ratio} times g "
            "(spark.sql.bucketing.coalesceBucketsInJoin.maxBucketRatio): the extension reads both in g tasks"
            f", or counts of which one is a multiple of the other by at most {settings.max_clone_ratio}"
            f" ({CLONE_RATIO_SETTING}): the extension joins them at the larger count"
        )
    if settings.coalesce_enabled:
        return ""
    if lo and all(p.hash == "spark" for p in scans) and hi % lo == 0 and hi // lo <= ratio:
        return f", or set spark.sql.bucketing.coalesceBucketsInJoin.enabled=true ({hi} is {hi // lo} times {lo})"
    return (
        f", or counts of which one is a multiple of the other by at most {ratio}, with"
        " spark.sql.bucketing.coalesceBucketsInJoin.enabled=true (two scans of Spark-hash tables)"
    )
