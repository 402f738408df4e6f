"""--catalog live takes each verdict from Spark's plan (pure logic over
verify's answers; tests/test_checker_cli.py runs it against real plans)."""

from __future__ import annotations

from spark_bucketing.checker.model import Finding, Side
from spark_bucketing.checker.plan_verdicts import (
    NOT_IN_PLAN,
    PLAN_ONLY,
    PLAN_SHUFFLES,
    adopt_plan,
    plan_only_findings,
)


def join(left_shuffle: bool, right_shuffle: bool, unknown: bool = False) -> Finding:
    return Finding(
        "join",
        3,
        [
            Side("db.a", ["k"], True, left_shuffle, ["NOT_BUCKETED"] if left_shuffle else []),
            Side("db.b", ["k"], True, right_shuffle, ["BUCKET_COUNT_MISMATCH"] if right_shuffle else []),
        ],
        unknown=unknown,
    )


def test_an_agreeing_verdict_is_kept_with_its_reasons():
    f = join(False, True)
    (correction,) = adopt_plan([f], [{"matched": True, "plan": [False, True]}])
    assert correction is None
    assert [s.shuffle for s in f.sides] == [False, True]
    assert f.sides[1].reasons == ["BUCKET_COUNT_MISMATCH"]


def test_a_wrong_verdict_becomes_the_plans_and_the_static_one_is_kept():
    f = join(True, False)
    (correction,) = adopt_plan([f], [{"matched": False, "plan": [False, True]}])
    assert [s.shuffle for s in f.sides] == [False, True] and f.shuffle_free is False
    assert f.sides[0].reasons == [] and f.sides[1].reasons == [PLAN_SHUFFLES]
    assert correction.to_json() == {"unknown": False, "shuffles": [True, False], "reasons": [["NOT_BUCKETED"], []]}


def test_an_unknown_verdict_is_answered_by_the_plan():
    f = join(False, False, unknown=True)
    (correction,) = adopt_plan([f], [{"matched": True, "plan": [False, False]}])
    assert f.unknown is False and f.shuffle_free is True
    assert correction is not None and correction.unknown is True


def test_sorts_follow_the_plan():
    f = join(False, False)
    f.sides[0].sort = "skipped"
    f.sides[1].sort = "needed"
    (correction,) = adopt_plan([f], [{"matched": False, "plan": [False, False], "plan_sorts": [True, True]}])
    assert [s.sort for s in f.sides] == ["needed", "needed"] and correction is not None


def test_a_skippable_sort_is_what_the_plan_shows_with_the_setting_off():
    f = join(False, False)
    f.sides[0].sort = "skippable"
    (correction,) = adopt_plan([f], [{"matched": True, "plan": [False, False], "plan_sorts": [True, True]}])
    assert correction is None and f.sides[0].sort == "skippable"


def test_a_lookup_takes_the_buckets_the_plan_reads():
    f = Finding("lookup", 2, [Side("db.a", ["k"], True, False)], buckets=8, buckets_read=8)
    (correction,) = adopt_plan([f], [{"matched": False, "plan": {"buckets_read": 1, "buckets": 8}}])
    assert f.buckets_read == 1 and correction.to_json() == {"unknown": False, "buckets_read": 8}


def test_an_operator_the_plan_does_not_have_is_unknown_not_guessed():
    f = join(False, False)
    (correction,) = adopt_plan([f], [{"matched": False, "plan": "no operator with these keys in the plan"}])
    assert f.unknown is True and [s.reasons for s in f.sides] == [[NOT_IN_PLAN], [NOT_IN_PLAN]]
    assert "optimizer removed or rewrote it" in f.suggestions[0] and correction is not None


def test_a_broadcast_and_an_unreadable_query_are_left_alone():
    f, q = join(False, True), Finding("query", 1, [], unknown=True)
    assert adopt_plan([f, q], [{"matched": None, "plan": "broadcast join"}, {"matched": None, "plan": None}]) == [
        None,
        None,
    ]
    assert [s.shuffle for s in f.sides] == [False, True] and q.unknown is True


def test_what_only_the_plan_has_becomes_findings_at_the_line_naming_it():
    sql = "select *\nfrom (select k, count(*) n\n      from db.fact group by k) a\nwhere a.k = 1"
    agg, lookup = plan_only_findings(
        sql,
        [
            {"kind": "aggregate", "keys": [["n"]], "shuffles": [True]},
            {"kind": "lookup", "relation": "spark_catalog.db.fact", "buckets_read": 1, "buckets": 8},
        ],
    )
    assert agg.kind == "aggregate" and agg.line == 2 and agg.sides[0].shuffle and agg.sides[0].reasons == [PLAN_ONLY]
    assert lookup.line == 3 and (lookup.buckets_read, lookup.buckets) == (1, 8)
    assert lookup.sides[0].reasons == [PLAN_ONLY]


def test_a_key_spark_projected_is_named_as_an_expression():
    """A window over an expression: the plan partitions by `_w0`, Spark's name for the projected expression,
    which the report showed as the key (issue 83); it says what it is instead."""
    (f,) = plan_only_findings(
        "select sum(v) over (partition by lower(k)) from t", [{"kind": "window", "keys": [["_w0"]], "shuffles": [True]}]
    )
    assert f.sides[0].keys == ["(an expression)"]
