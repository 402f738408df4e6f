"""Spark's physical plan as `EXPLAIN` prints it, read back into a tree.

Text, not the JVM objects, so that a plan can come from any connection that
runs SQL: the in-process session, a Thrift Server, or dbt's own adapter."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_PREFIX = re.compile(r"^((?:[ :] {2})*)(?:[+:]- )?")
_CODEGEN = re.compile(r"^\*\(\d+\) ")
_NAME = re.compile(r"^[A-Za-z]+")
_IDENT = r"(?:`[^`]*`|\w+)(?:\.(?:`[^`]*`|\w+))*"
ATTRIBUTE = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)#\d+L?")


@dataclass
class Node:
    name: str  # the operator as EXPLAIN names it: SortMergeJoin, Exchange, FileScan ...
    text: str  # everything after the name
    children: list[Node] = field(default_factory=list)

    def walk(self):
        yield self
        for c in self.children:
            yield from c.walk()


def parse_plan(text: str) -> Node:
    """The tree of the `== Physical Plan ==` section (the whole text when
    there is no section header). Depth comes from the three-character
    indentation steps `EXPLAIN` draws (`+- `, `:- `, `:  `, `   `)."""
    lines = text.splitlines()
    if "== Physical Plan ==" in lines:
        lines = lines[lines.index("== Physical Plan ==") + 1 :]
    root: Node | None = None
    stack: list[tuple[int, Node]] = []
    for line in lines:
        if not line.strip():
            if root is not None:
                break  # the plan ends at the first blank line (subquery sections follow)
            continue
        prefix = _PREFIX.match(line).group(0)
        depth = len(prefix) // 3 if prefix else 0
        body = _CODEGEN.sub("", line[len(prefix) :])
        name_match = _NAME.match(body)
        node = Node(name_match.group(0) if name_match else body, body[name_match.end() if name_match else 0 :])
        while stack and stack[-1][0] >= depth:
            stack.pop()
        if stack:
            stack[-1][1].children.append(node)
        elif root is None:
            root = node
        stack.append((depth, node))
    if root is None:
        raise ValueError(f"no physical plan in the EXPLAIN output: {text[:200]!r}")
    return root


def bracket_groups(text: str) -> list[str]:
    """The top-level `[...]` groups of an operator's text, without brackets."""
    groups, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            if depth == 0:
                start = i + 1
            depth += 1
        elif ch == "]" and depth:
            depth -= 1
            if depth == 0:
                groups.append(text[start:i])
    return groups


def split_top(text: str) -> list[str]:
    """A comma-separated expression list, split only outside parentheses."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail else parts


def key_names(group: str) -> list[str]:
    """Per key expression of a list: its column names, lower case, comma-joined."""
    return [",".join(sorted({n.lower() for n in ATTRIBUTE.findall(e)})) for e in split_top(group)]


def scan_table(node: Node) -> str | None:
    """`FileScan parquet spark_catalog.db.t[cols] ...` -> `db.t`; a Hive table
    scan (`Scan hive db.t`) likewise."""
    m = re.match(rf"\s*(?:\w+\s+)?({_IDENT})\[", node.text) if node.name == "FileScan" else None
    if m is None and node.name == "Scan":
        m = re.match(rf"\s*hive\s+({_IDENT})", node.text)
    if m is None:
        return None
    parts = [p.strip("`").lower() for p in re.findall(r"`[^`]*`|\w+", m.group(1))]
    return ".".join(parts[-2:])


def selected_buckets(node: Node) -> tuple[int, int] | None:
    """(buckets read, buckets) of a bucketed file scan; None when the scan is
    not bucketed."""
    m = re.search(r"SelectedBucketsCount: (\d+) out of (\d+)", node.text)
    return (int(m.group(1)), int(m.group(2))) if m else None
