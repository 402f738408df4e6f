"""How a finding names one side's keys (base relation, base columns, the
block's own names) and why that side shuffles."""

from __future__ import annotations

from dataclasses import dataclass, field

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Output, Part


@dataclass
class KeyDescription:
    relation: str | None  # the one base relation the keys come from, if one
    keys: list[str]  # as the base relation names them
    local: list[str]  # as the query block names them
    notes: list[str] = field(default_factory=list)  # what the keys went through (cast, union, aggregate, ...)
    unknown: bool = False


def describe_keys(aliases: list[str], keys: list, sources: dict[str, Output]) -> KeyDescription:
    names, relations, notes, unknown = [], set(), [], False
    for k in keys:
        if isinstance(k, tuple):
            src = sources.get(k[0])
            rel, col = src.base.get(k[1], (src.relation, k[1])) if src else (None, k[1])
            if src is not None:
                if rel is None:
                    rel = src.relation
                notes += src.notes.get(k[1], [])
                unknown = unknown or src.unknown
                if k[1] not in src.types and src.types and not src.unknown:
                    notes.append(E.UNKNOWN_COLUMN)
                    unknown = True
            relations.add(rel)
            names.append(col)
        else:
            names.append(k.sql("spark"))
            notes.append(E.KEY_CAST if isinstance(k, exp.Cast) else E.KEY_EXPRESSION)
            for c in k.find_all(exp.Column):
                src = sources.get(c.table)
                if src is not None:
                    relations.add(src.base.get(c.name.lower(), (src.relation, c.name))[0] or src.relation)
                    unknown = unknown or src.unknown
    if len(aliases) == 1:
        src = sources.get(aliases[0])
        if src is not None:
            notes = list(src.reasons) + notes
            unknown = unknown or src.unknown
    local = [
        k[1] if isinstance(k, tuple) else ",".join(sorted({c.name.lower() for c in k.find_all(exp.Column)}))
        for k in keys
    ]
    relation = relations.pop() if len(relations) == 1 else None
    return KeyDescription(relation=relation, keys=names, local=local, notes=notes, unknown=unknown)


def join_side_reasons(
    part: Part | None, keys: list, plain: bool, type_ok: bool, desc: KeyDescription, settings: EngineSettings
) -> list[str]:
    """Why a join side whose partitioning does not serve the join shuffles."""
    reasons = []
    if not plain:
        reasons += [n for n in desc.notes if n in (E.KEY_CAST, E.KEY_EXPRESSION)] or [E.KEY_EXPRESSION]
    if not type_ok:
        reasons.append(E.KEY_TYPE_MISMATCH)
    key_notes = [n for n in desc.notes if n in (E.KEY_CAST, E.KEY_EXPRESSION, E.UNION, E.AGGREGATE)]
    if part is None:
        reasons += key_notes or [n for n in desc.notes if n not in (E.KEY_CAST, E.KEY_EXPRESSION)] or [E.NOT_BUCKETED]
    elif plain and type_ok:
        opt = part.options[0]
        ks = set(keys)
        if ks > set(opt) and settings.require_all_cluster_keys:
            reasons.append(E.KEYS_SUPERSET)
        elif not set(opt) <= ks:
            reasons.append(E.KEYS_NOT_BUCKET_COLUMNS)
        if not part.bucketed:
            reasons.append(E.JOIN_OUTPUT)
    if desc.unknown:
        known = [n for n in (E.UNKNOWN_RELATION, E.UNKNOWN_BUCKETING) if n in desc.notes]
        reasons += known or [E.UNKNOWN_COLUMN]
    return dedupe(reasons)


def dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))
