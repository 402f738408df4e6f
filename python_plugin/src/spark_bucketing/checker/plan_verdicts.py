"""`--catalog live`: every verdict is the plan's. Spark plans the compiled
query (`EXPLAIN`, nothing runs); each finding the static model made takes
what the plan shows for its operator or scan, keeping the static model's
reasons and fixes where they agree, and the plan's operators and pruned
scans the static model did not see become findings of their own. What the
static model got wrong is kept beside the plan's answer and counted, so
that its errors show in the user's CI instead of misleading them."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from spark_bucketing.checker.model import Finding, Side

# A side the plan shuffles where the static model saw no reason to.
PLAN_SHUFFLES = "PLAN_SHUFFLES"
# An operator or pruned scan in the plan that no finding of the static model stands for.
PLAN_ONLY = "PLAN_ONLY"
# A finding whose operator the plan does not have (the optimizer removed or rewrote it).
NOT_IN_PLAN = "NOT_IN_PLAN"


@dataclass
class Correction:
    """What the static model said of a finding the plan answered otherwise
    (`absent`: it made no finding where the plan has one)."""

    shuffles: list[bool] | None = None
    buckets_read: int | None = None
    unknown: bool = False
    reasons: list[list[str]] = field(default_factory=list)
    absent: bool = False

    def to_json(self) -> dict:
        if self.absent:
            return {"absent": True}
        out: dict = {"unknown": self.unknown}
        if self.shuffles is not None:
            out["shuffles"] = self.shuffles
            out["reasons"] = self.reasons
        if self.buckets_read is not None or self.shuffles is None:
            out["buckets_read"] = self.buckets_read
        return out


def adopt_plan(findings: list[Finding], results: list[dict]) -> list[Correction | None]:
    """Each finding set to the plan's answer in `results` (verify's, one per
    finding); per finding, what the static model said where it differed."""
    return [_adopt(f, r) for f, r in zip(findings, results, strict=True)]


def _adopt(f: Finding, result: dict) -> Correction | None:
    plan = result.get("plan")
    if f.kind == "query" or plan is None:
        return None
    before = Correction(
        shuffles=[s.shuffle for s in f.sides] if f.kind != "lookup" else None,
        buckets_read=f.buckets_read if f.kind == "lookup" else None,
        unknown=f.unknown,
        reasons=[list(s.reasons) for s in f.sides],
    )
    if f.kind == "lookup":
        if not isinstance(plan, dict):
            return _not_in_plan(f, before)
        if plan["buckets_read"] == f.buckets_read and not f.unknown:
            return None
        f.buckets_read, f.unknown = plan["buckets_read"], False
        return before
    if isinstance(plan, str):
        # A broadcast join has no shuffle to compare; anything else is an operator the plan does not have.
        if plan == "broadcast join":
            return None
        return _not_in_plan(f, before)
    changed = f.unknown or [s.shuffle for s in f.sides] != plan
    for s, shuffled in zip(f.sides, plan, strict=True):
        if s.shuffle != shuffled:
            s.reasons = [PLAN_SHUFFLES] if shuffled else []
        s.shuffle = shuffled
    for s, sorted_ in zip(f.sides, result.get("plan_sorts") or [], strict=False):
        planned = "needed" if sorted_ else "skipped"
        # "skippable": a Sort the plan has with the ordering setting off, as it is planned here.
        if s.sort is None or s.sort == planned or (s.sort == "skippable" and sorted_):
            continue
        s.sort, changed = planned, True
    f.unknown = False
    return before if changed else None


def _not_in_plan(f: Finding, before: Correction) -> Correction:
    f.unknown = True
    for s in f.sides:
        s.reasons = [NOT_IN_PLAN]
    f.suggestions.insert(0, "Spark's plan has no such operator here: the optimizer removed or rewrote it")
    return before


def plan_only_findings(sql: str, leftover: list[dict]) -> list[Finding]:
    """Findings for what the plan has and no static finding stands for:
    operators (`{"kind", "keys", "shuffles"}`) and pruned scans
    (`{"kind": "lookup", "relation", "buckets_read", "buckets"}`)."""
    out = []
    for item in leftover:
        if item["kind"] == "lookup":
            side = Side(item["relation"], [], True, False, [PLAN_ONLY])
            line = _line_of(sql, item["relation"].rsplit(".", 1)[-1])
            out.append(Finding("lookup", line, [side], buckets=item["buckets"], buckets_read=item["buckets_read"]))
            continue
        sides = [
            Side(None, [_readable_key(k) for k in keys], False, shuffled, [PLAN_ONLY] if shuffled else [])
            for keys, shuffled in zip(item["keys"], item["shuffles"], strict=True)
        ]
        line = _line_of(sql, item["keys"][0][0] if item["keys"] and item["keys"][0] else "")
        out.append(Finding(item["kind"], line, sides))
    return out


# The names Spark's optimizer gives the expressions it projects for an operator (a window's `_w0`, an
# aggregate's `_groupingexpression`): no column of the query.
_INTERNAL = re.compile(r"_w\d+|_groupingexpression\w*|_common_expr_\d+")


def _readable_key(key: str) -> str:
    """A plan's key as the report names it: an expression Spark projected, not its internal name."""
    return "(an expression)" if _INTERNAL.fullmatch(key) else key


def _line_of(sql: str, word: str) -> int:
    """The first line of `sql` that names `word` (1 when none does)."""
    if word:
        pattern = re.compile(rf"\b{re.escape(word)}\b", re.IGNORECASE)
        for number, text in enumerate(sql.splitlines(), 1):
            if pattern.search(text):
                return number
    return 1
