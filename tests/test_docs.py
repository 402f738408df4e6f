"""The README and docs/ are true to the code: every config the macros read is
documented in docs/configs.md and every documented config is read; every
reason code the checker emits is documented; the front page stays short and
its links resolve. Reads sources; no JVM."""

from __future__ import annotations

import re
from pathlib import Path

from spark_bucketing.checker import engines, plan_verdicts

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"


def configs_read_by_macros() -> set[str]:
    text = "\n".join(p.read_text() for p in (ROOT / "macros").rglob("*.sql"))
    names = set(re.findall(r"config\.get\('(\w+)'", text))
    names |= set(re.findall(r"column_list_config\('(\w+)'", text))
    names |= set(re.findall(r"seconds_config\('(\w+)'", text))
    for group in re.findall(r"for config_name in \(([^)]*)\)", text):
        names |= set(re.findall(r"'(\w+)'", group))
    return names


def configs_documented() -> set[str]:
    names: set[str] = set()
    for line in (DOCS / "configs.md").read_text().splitlines():
        if line.startswith("| `"):
            names |= set(re.findall(r"`(\w+)`", line.split("|")[1]))
    return names


def test_every_config_is_documented_and_every_documented_config_exists():
    read, documented = configs_read_by_macros(), configs_documented()
    assert "clustered_by" in read and "merge_row_accounting" in read  # the parser sees the macros
    assert sorted(read - documented) == [], "read by the macros, missing from docs/configs.md"
    assert sorted(documented - read) == [], "in docs/configs.md, read by no macro"


def test_every_reason_code_is_documented():
    codes = {
        v
        for module in (engines, plan_verdicts)
        for k, v in vars(module).items()
        if k.isupper() and isinstance(v, str) and re.fullmatch(r"[A-Z_]+", v)
    }
    assert "BUCKET_COUNT_MISMATCH" in codes and "PLAN_SHUFFLES" in codes
    text = (DOCS / "checker.md").read_text()
    assert sorted(c for c in codes if f"`{c}`" not in text) == []


def test_the_front_page_is_short_and_its_links_resolve():
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 300
    for page in ("configs", "incremental", "metadata", "tests", "checker", "extension", "cluster", "benchmarks"):
        assert f"(docs/{page}.md)" in readme
    for target in re.findall(r"\]\(((?:docs/)?[\w./-]+\.md)(?:#[\w-]+)?\)", readme):
        assert (ROOT / target).exists(), target
    for page in DOCS.glob("*.md"):
        for target in re.findall(r"\]\(([\w./-]+\.md)(?:#[\w-]+)?\)", page.read_text()):
            assert (page.parent / target).exists(), f"{page.name} links {target}"
