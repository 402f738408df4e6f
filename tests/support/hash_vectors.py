"""Hive 4's bucket numbers of fixed keys (tests/data/hive4_bucket_vectors.tsv): every type the package's
Hive hash takes, alone with its edge values and in combinations, for bucketing versions 1 and 2 and several
bucket counts, as Hive 4's own classes give them (harness/hive4_oracle.py). tests/test_hashing.py checks
the file against Hive 4, and the package's Python hash and its Jinja macro against the file.
`SB_WRITE_VECTORS=1 pytest tests/test_hashing.py -k vectors` writes it again."""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from harness.hive4_oracle import decode, encode

FILE = Path(__file__).resolve().parents[1] / "data" / "hive4_bucket_vectors.tsv"
HEADER = "version\tbuckets\ttypes\tvalues\thash\tbucket"
SINGLE_COUNTS = (2, 7, 16, 1024)
COMBINATIONS = (
    ("int", "string"),
    ("bigint", "date", "boolean"),
    ("double", "tinyint", "float"),
    ("string", "smallint", "date", "bigint"),
)
COMBINATION_COUNTS = (8, 13)
COMBINATION_KEYS = 12


@dataclass(frozen=True)
class Vector:
    version: int
    buckets: int
    types: tuple[str, ...]
    values: tuple
    hash: int
    bucket: int


def cases(values: dict[str, list]) -> list[tuple[int, int, tuple[str, ...], list[tuple]]]:
    """(version, buckets, types, keys) to ask Hive 4 about: each type's `values` alone, and random keys of
    each combination (seeded: the same on every run)."""
    rng = random.Random(4)
    out = []
    for version in (1, 2):
        for type_name, column in values.items():
            for n in SINGLE_COUNTS:
                out.append((version, n, (type_name,), [(v,) for v in column]))
        for types in COMBINATIONS:
            for n in COMBINATION_COUNTS:
                keys = [tuple(rng.choice(values[t]) for t in types) for _ in range(COMBINATION_KEYS)]
                out.append((version, n, types, keys))
    return out


def from_oracle(oracle, values: dict[str, list]) -> list[Vector]:
    vectors = []
    for version, n, types, keys in cases(values):
        for key, (hash_code, bucket) in zip(keys, oracle.bucket_numbers(keys, types, n, version), strict=True):
            vectors.append(Vector(version, n, types, key, hash_code, bucket))
    return vectors


def write(vectors: list[Vector]) -> None:
    lines = [HEADER]
    for v in vectors:
        encoded = "|".join(encode(value, t) for value, t in zip(v.values, v.types, strict=True))
        lines.append(f"{v.version}\t{v.buckets}\t{','.join(v.types)}\t{encoded}\t{v.hash}\t{v.bucket}")
    FILE.parent.mkdir(exist_ok=True)
    FILE.write_text("\n".join(lines) + "\n")


def read() -> list[Vector]:
    lines = FILE.read_text().splitlines()
    assert lines[0] == HEADER, f"{FILE}: unexpected header {lines[0]!r}"
    vectors = []
    for line in lines[1:]:
        version, buckets, types, encoded, hash_code, bucket = line.split("\t")
        names = tuple(types.split(","))
        values = tuple(decode(text, t) for text, t in zip(encoded.split("|"), names, strict=True))
        vectors.append(Vector(int(version), int(buckets), names, values, int(hash_code), int(bucket)))
    return vectors
