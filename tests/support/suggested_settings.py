"""Advice that works when followed (issue 83): the settings a finding's
suggestions offer, and a query planned again with them, shared by the
corpus's and the randomized generator's tests."""

from __future__ import annotations

import re
from collections import Counter

from spark_bucketing.checker import Catalog, analyze_sql
from spark_bucketing.checker.engines import SESSION_KEYS
from spark_bucketing.checker.verify import session_conf, session_values, verify
from spark_bucketing.contracts import FOREIGN_TABLES_SWITCH
from spark_bucketing.extension import SWITCH
from tests.support.checker_corpus import check_settings

SETTING = re.compile(r"\b(?:set|SET) (spark[\w.]+)=(true|false|\d+)\b")
ENABLE_EXTENSION = "enable the session extension"


def suggested_settings(finding, catalog: Catalog) -> dict[str, str]:
    """The settings a finding's suggestions offer (a `set key=value`, or the session extension: for a table
    this package did not build, with foreignTables, as the suggestion says)."""
    out = {}
    foreign = any(
        (info := catalog.get(s.relation or "")) is not None and not info.built_by_package
        for s in finding.sides
        if s.shuffle
    )
    for text in finding.suggestions:
        out.update(dict(SETTING.findall(text)))
        if ENABLE_EXTENSION in text:
            out[SWITCH] = "true"
            if foreign and f"{FOREIGN_TABLES_SWITCH}=true" in text:
                out[FOREIGN_TABLES_SWITCH] = "true"
    return out


def try_suggested_settings(client, catalog: Catalog, query: str, conf: dict[str, str]) -> tuple[Counter, list]:
    """For each finding of `query` that shuffles for one reason and is offered a setting: the query planned
    again with it. Returns (settings tried per reason code, the findings whose shuffle the setting left)."""
    tried: Counter = Counter()
    failed = []
    conf = {"spark.sql.ansi.enabled": "false", **conf}
    findings = analyze_sql(query, catalog, check_settings(conf, session_values(client, SESSION_KEYS)))
    for i, f in enumerate(findings):
        reasons = {r for s in f.sides if s.shuffle for r in s.reasons}
        settings = suggested_settings(f, catalog)
        if f.kind == "lookup" or f.shuffle_free or not settings or len(reasons) != 1:
            continue
        after = {**conf, **settings}
        with session_conf(client, after):
            again = analyze_sql(query, catalog, check_settings(after, session_values(client, SESSION_KEYS)))
            plan = verify(client, query, again)[i] if len(again) == len(findings) else None
        tried[next(iter(reasons))] += 1
        if plan is None:  # the findings' order moved: which one is this finding's is not known
            failed.append((query, f.to_json(), settings, "the findings differ with the setting"))
            continue
        shuffles_after = sum(plan["plan"]) if isinstance(plan["plan"], list) else 0
        if not shuffles_after < sum(s.shuffle for s in f.sides):
            failed.append((query, f.to_json(), settings, plan))
    return tried, failed
