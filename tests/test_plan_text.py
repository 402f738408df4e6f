"""Reading EXPLAIN text back into a plan tree (pure logic; the corpus tests
check the same reading against live plans)."""

from __future__ import annotations

from spark_bucketing.checker.plan_text import parse_plan, scan_table, selected_buckets, split_top
from spark_bucketing.checker.verify import plan_nodes, scans

AQE_JOIN = """== Physical Plan ==
AdaptiveSparkPlan isFinalPlan=false
+- SortMergeJoin [k#33], [k#36], Inner
   :- Sort [k#33 ASC NULLS FIRST], false, 0
   :  +- Filter (k#33 IN (1,2,3) AND isnotnull(k#33))
   :     +- FileScan parquet spark_catalog.db.a8[k#33,v#34] Bucketed: true, SelectedBucketsCount: 2 out of 8
   +- Sort [k#36 ASC NULLS FIRST], false, 0
      +- Exchange hashpartitioning(k#36, 8), ENSURE_REQUIREMENTS, [plan_id=1]
         +- FileScan parquet spark_catalog.db.p[k#36,w#37] Batched: true, Bucketed: false
"""

CODEGEN_AGG = """== Physical Plan ==
*(3) SortAggregate(key=[k#5, g#6], functions=[count(1)])
+- *(3) Project [k#5, g#6]
   +- *(3) SortMergeJoin [k#5], [k#8], Inner
      :- *(1) ColumnarToRow
      :  +- FileScan parquet spark_catalog.db.a8[k#5,g#6] Bucketed: true, SelectedBucketsCount: 8 out of 8
      +- *(2) ColumnarToRow
         +- FileScan parquet spark_catalog.db.b8[k#8] Bucketed: true, SelectedBucketsCount: 8 out of 8

"""

WINDOW = """== Physical Plan ==
Window [row_number() windowspecdefinition(g#35, v#34 ASC NULLS FIRST, specifiedwindowframe(RowFrame, \
unboundedpreceding$(), currentrow$())) AS rn#54], [g#35], [v#34 ASC NULLS FIRST]
+- Sort [g#35 ASC NULLS FIRST, v#34 ASC NULLS FIRST], false, 0
   +- Exchange hashpartitioning(g#35, 4), ENSURE_REQUIREMENTS, [plan_id=207]
      +- FileScan parquet spark_catalog.db.a8[k#33,v#34,g#35] Bucketed: false (disabled by query planner)
"""


def test_join_sides_their_exchanges_and_sorts():
    (join,) = plan_nodes(parse_plan(AQE_JOIN))
    assert (join.kind, join.operator, join.keys) == ("join", "SortMergeJoin", [["k"], ["k"]])
    assert join.shuffles == [False, True] and join.sorts == [True, True]
    assert scans(parse_plan(AQE_JOIN)) == [("db.a8", (2, 8)), ("db.p", None)]


def test_codegen_prefixes_and_a_sort_aggregate_over_a_join_without_sorts():
    join, agg = plan_nodes(parse_plan(CODEGEN_AGG))
    assert join.shuffles == [False, False] and join.sorts == [False, False]
    assert (agg.kind, agg.keys, agg.shuffles) == ("aggregate", [["k", "g"]], [False])


def test_window_partition_keys():
    (window,) = plan_nodes(parse_plan(WINDOW))
    assert (window.kind, window.keys, window.shuffles, window.sorts) == ("window", [["g"]], [True], [True])


def test_pieces():
    assert split_top("cast(a#1 as bigint), f(b#2, c#3), d#4") == ["cast(a#1 as bigint)", "f(b#2, c#3)", "d#4"]
    scan = parse_plan("FileScan orc spark_catalog.`my db`.t[x#1] SelectedBucketsCount: 1 out of 64")
    assert scan_table(scan) == "my db.t"
    assert selected_buckets(scan) == (1, 64)
