"""The bucket-join checker: which joins and aggregations of a compiled query
run without a shuffle, why not, and what to change."""

from spark_bucketing.checker.analyze import analyze_sql
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Finding, Side
from spark_bucketing.checker.relations import Catalog, RelationInfo

__all__ = ["Catalog", "EngineSettings", "Finding", "RelationInfo", "Side", "analyze_sql"]
