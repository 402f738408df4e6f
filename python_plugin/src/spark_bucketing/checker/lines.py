"""Where a finding is reported: the line of the compiled query a node comes from."""

from __future__ import annotations

from sqlglot import exp


def _own_line(node) -> int | None:
    line = node.meta.get("line") if hasattr(node, "meta") else None
    return int(line) if line else None


def source_line(node: exp.Expression | None, fallback: exp.Expression | None = None) -> int:
    """The first line sqlglot recorded in `node` or below it, else the line
    of `fallback` itself, else 1."""
    for n in node.walk() if node is not None else ():
        if (line := _own_line(n)) is not None:
            return line
    return (_own_line(fallback) if fallback is not None else None) or 1
