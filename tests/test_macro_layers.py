"""The macros' structure, read from their source (no JVM): folders are layers,
a call between files only goes down a layer or stays in it, the files' call
graph has no cycle, every called macro exists, and no macro is long."""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

import pytest

MACROS = Path(__file__).resolve().parents[1] / "macros"

#: Folder -> layer, lowest first. A macro may call macros of its own layer or
#: of lower ones.
LAYERS = {
    "utils": 0,
    "catalog": 1,
    "steps": 2,
    "publish": 3,
    "strategies": 4,
    "validation": 4,
    "materializations": 5,
    "tests": 5,
}
MAX_LINES = 60
MAX_MATERIALIZATION_LINES = 40

BLOCK = re.compile(r"{%-?\s*(macro|test|materialization)\s+(\w+)(.*?){%-?\s*end\1\s*-?%}", re.S)
CALL = re.compile(r"spark_bucketing\.(\w+)\s*\(")
DISPATCH = re.compile(r"adapter\.dispatch\(\s*'(\w+)'\s*,\s*'spark_bucketing'")


def _macros() -> dict[str, dict]:
    out: dict[str, dict] = {}
    for path in sorted(MACROS.rglob("*.sql")):
        text = path.read_text()
        for m in BLOCK.finditer(text):
            kind, name, body = m.group(1), m.group(2), m.group(0)
            key = f"test_{name}" if kind == "test" else name
            assert key not in out, f"macro {key} is defined twice ({out.get(key, {}).get('file')} and {path})"
            calls = set(CALL.findall(body)) | {f"default__{d}" for d in DISPATCH.findall(body)}
            out[key] = {"file": path.relative_to(MACROS), "kind": kind, "lines": body.count("\n") + 1, "calls": calls}
    return out


MACRO_DEFS = _macros()


def _layer(file: Path) -> int:
    folder = file.parts[0] if len(file.parts) > 1 else ""
    assert folder in LAYERS, f"macros/{file} is in no layer folder ({', '.join(LAYERS)})"
    return LAYERS[folder]


def test_every_file_sits_in_a_layer():
    for path in MACROS.rglob("*.sql"):
        _layer(path.relative_to(MACROS))


def test_every_called_macro_exists():
    missing = [
        f"{m['file']}: {name} calls spark_bucketing.{c}"
        for name, m in MACRO_DEFS.items()
        for c in m["calls"]
        if c not in MACRO_DEFS
    ]
    assert missing == []


def test_calls_between_files_never_go_up_a_layer():
    up = []
    for name, m in MACRO_DEFS.items():
        for c in m["calls"]:
            callee = MACRO_DEFS.get(c)
            if callee and callee["file"] != m["file"] and _layer(callee["file"]) > _layer(m["file"]):
                up.append(f"{m['file']}:{name} -> {callee['file']}:{c}")
    assert up == []


def test_the_files_call_graph_has_no_cycle():
    edges: dict[Path, set[Path]] = defaultdict(set)
    for m in MACRO_DEFS.values():
        for c in m["calls"]:
            callee = MACRO_DEFS.get(c)
            if callee and callee["file"] != m["file"]:
                edges[m["file"]].add(callee["file"])
    state: dict[Path, int] = {}

    def visit(node: Path, path: list[Path]) -> None:
        state[node] = 1
        for nxt in sorted(edges[node]):
            if state.get(nxt) == 1:
                cycle = path[path.index(nxt) :] + [nxt] if nxt in path else [node, nxt]
                pytest.fail("cycle: " + " -> ".join(map(str, cycle)))
            if nxt not in state:
                visit(nxt, path + [nxt])
        state[node] = 2

    for node in sorted(edges):
        if node not in state:
            visit(node, [node])


def test_no_macro_is_long():
    long = [
        f"{m['file']}:{name} has {m['lines']} lines"
        for name, m in MACRO_DEFS.items()
        if m["lines"] > (MAX_MATERIALIZATION_LINES if m["kind"] == "materialization" else MAX_LINES)
    ]
    assert long == []


def test_the_layer_test_sees_the_package():
    """Guards the parser: it must find the materializations, both generic
    tests and the dispatched public macros."""
    assert {"bucketed_table", "bucketed_incremental", "test_bucket_layout", "test_bucket_metadata"} <= set(MACRO_DEFS)
    assert "default__bucket_id_expr" in MACRO_DEFS["bucket_id_expr"]["calls"]
    assert len(MACRO_DEFS) > 80
