"""Advice that works when followed (issue 83): the settings a finding's
suggestions offer, and a query planned again with them, shared by the
corpus's and the randomized generator's tests."""

from __future__ import annotations

import re
from collections import Counter

from spark_bucketing.checker import Catalog, analyze_sql
from spark_bucketing.checker.declared import declare
from spark_bucketing.checker.engines import SESSION_KEYS
from spark_bucketing.checker.proven import offered_settings
from spark_bucketing.checker.relations import catalog_from_json, catalog_to_json
from spark_bucketing.checker.verify import session_conf, session_values, verify
from spark_bucketing.contracts import FOREIGN_TABLES_SWITCH
from spark_bucketing.metadata import BucketSpec
from tests.support.checker_corpus import check_settings


def suggested_settings(finding, catalog: Catalog) -> dict[str, str]:
    """The settings a finding's suggestions offer, read as the checker reads its own texts (proven.py); the
    foreignTables switch only for a shuffled side this package did not build, as the suggestion says."""
    out = {}
    foreign = any(
        (info := catalog.get(s.relation or "")) is not None and not info.built_by_package
        for s in finding.sides
        if s.shuffle
    )
    for text in finding.suggestions:
        offered = offered_settings(text)
        if not foreign:
            offered.pop(FOREIGN_TABLES_SWITCH, None)
        out.update(offered)
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


MATERIALIZE = re.compile(
    r"materialize (\S+) with bucketed_table, clustered_by=\[([^\]]*)\](?:, buckets=(\d+))?"
    r"(?:, bucket_hash='(\w+)')?(?:, bucketing_version=(\d))?"
)


def try_suggested_specs(client, catalog: Catalog, query: str, conf: dict[str, str], schema: str) -> tuple[int, list]:
    """For each finding that shuffles for one reason and is told to materialize a relation bucketed: that
    relation declared in `schema` under its own table name, with the suggested spec (the package's default
    hash, Hive's, where the text names none) and no data, as `--catalog local` declares it, and the query
    planned again reading it there. Returns (suggestions tried, the findings whose shuffle it left)."""
    conf = {"spark.sql.ansi.enabled": "false", **conf}
    session = session_values(client, SESSION_KEYS)
    findings = analyze_sql(query, catalog, check_settings(conf, session))
    tried, failed = 0, []
    for i, f in enumerate(findings):
        reasons = {r for s in f.sides if s.shuffle for r in s.reasons}
        specs = [m for t in f.suggestions if (m := MATERIALIZE.match(t))]
        if f.kind == "lookup" or f.unknown or f.shuffle_free or len(reasons) != 1 or len(specs) != 1:
            continue
        relation, keys, buckets, hash_, version = specs[0].groups()
        moved = f"{schema}.{relation.split('.')[-1]}"
        info = catalog_from_json({moved: catalog_to_json(catalog)[relation]}).get(moved)
        info.bucket = BucketSpec(
            hash_ or "hive", tuple(k.strip() for k in keys.split(",")), int(buckets or 8), version=int(version or 1)
        )
        info.partitions, info.latest, info.built_by_package = [], None, True
        local = Catalog()
        for other in catalog.relations.values():
            local.add(other)
        local.add(info)
        client.query(f"drop database if exists {schema} cascade")
        assert declare(client, local, {moved}) == {}
        # A query may name a table without an alias: the declared copy keeps the table's own name.
        again_sql = re.sub(rf"\b{re.escape(relation)}\b", moved, query)
        again = analyze_sql(again_sql, local, check_settings(conf, session))
        tried += 1
        with session_conf(client, conf):
            plan = verify(client, again_sql, again)[i] if len(again) == len(findings) else None
        if plan is None or not isinstance(plan["plan"], list) or not sum(plan["plan"]) < _shuffled(f):
            failed.append((query, f.to_json(), specs[0].group(0), plan))
        client.query(f"drop database if exists {schema} cascade")
    return tried, failed


def _shuffled(f) -> int:
    return sum(s.shuffle for s in f.sides)
