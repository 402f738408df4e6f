"""Advice that works when followed: a setting a finding's suggestions offer
(a Spark setting, the session extension, its foreignTables switch) is kept
only where the model, planning the query again with it, finds that
finding's shuffle gone or lessened. Where it is not (another obstacle stays:
a cast key, other counts, the other side), the suggestion is replaced by
what the query meets with the setting on."""

from __future__ import annotations

import re
from collections.abc import Callable

from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.model import Finding
from spark_bucketing.contracts import FOREIGN_TABLES_SWITCH
from spark_bucketing.extension import SWITCH

SETTING = re.compile(r"\b(?:set|SET) (spark[\w.]+)=(true|false|\d+)\b")
ENABLE_EXTENSION = "enable the session extension"
NOT_ENOUGH = "alone would not remove this shuffle"
OTHER_PLAN = "this query plans otherwise"


def offered_settings(text: str) -> dict[str, str]:
    """The settings a suggestion's text offers (the extension's foreignTables switch where it names it: it
    changes only how tables this package did not build are read); none from a text that says a setting
    would not work (_not_enough's)."""
    if NOT_ENOUGH in text or OTHER_PLAN in text:
        return {}
    out = dict(SETTING.findall(text))
    if ENABLE_EXTENSION in text or f"{FOREIGN_TABLES_SWITCH}=true" in text:
        out[SWITCH] = "true"
    if f"{FOREIGN_TABLES_SWITCH}=true" in text:
        out[FOREIGN_TABLES_SWITCH] = "true"
    return out


def keep_proven_settings(
    findings: list[Finding], settings: EngineSettings, analyze: Callable[[EngineSettings], list[Finding]]
) -> None:
    """Each finding's offered settings checked by `analyze` (the query's analysis under other settings):
    all of them together first (several obstacles, each with its setting, are one fix), then each alone."""
    for i, f in enumerate(findings):
        if f.kind == "lookup" or f.shuffle_free or f.unknown:
            continue
        offers = [(t, o) for t in f.suggestions if (o := offered_settings(t)) and not _in_force(o, settings)]
        if not offers:
            continue
        together = {k: v for _, o in offers for k, v in o.items()}
        if len(offers) > 1 and _lessened(i, f, analyze(_with(settings, together)), findings):
            continue
        for text, offered in offers:
            again = analyze(_with(settings, offered))
            if not _lessened(i, f, again, findings):
                same = again[i] if len(again) == len(findings) else None
                f.suggestions[f.suggestions.index(text)] = _not_enough(offered, same)


def _in_force(offered: dict[str, str], settings: EngineSettings) -> bool:
    return all(settings.conf.get(k) == v for k, v in offered.items())


def _with(settings: EngineSettings, offered: dict[str, str]) -> EngineSettings:
    return EngineSettings(settings.engine, {**settings.conf, **offered})


def _lessened(i: int, f: Finding, again: list[Finding], findings: list[Finding]) -> bool:
    """Whether the analysis under the setting has this finding (same place) with fewer sides shuffled."""
    if len(again) != len(findings) or again[i].kind != f.kind:
        return False
    return _shuffles(again[i]) < _shuffles(f)


def _shuffles(f: Finding) -> int:
    return sum(s.shuffle for s in f.sides)


def _not_enough(offered: dict[str, str], same: Finding | None) -> str:
    stated = ", ".join(f"{k}={v}" for k, v in offered.items())
    if same is None:
        return f"with {stated} {OTHER_PLAN}; the checker cannot say whether it removes this shuffle"
    remaining = [t for t in same.suggestions if not offered_settings(t)]
    reasons = sorted({r for s in same.sides if s.shuffle for r in s.reasons})
    tail = f": {'; '.join(remaining)}" if remaining else ""
    return f"{stated} {NOT_ENOUGH} (then: {', '.join(reasons) or 'none'}){tail}"
