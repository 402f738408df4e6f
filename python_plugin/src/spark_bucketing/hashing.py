"""Bucket ids as Spark writes them, for both hash families.

``spark``: Spark's native bucketing, ``pmod(murmur3_x86_32(cols, seed=42), N)``
with Spark's own byte-tail variant for strings.
``hive``: Hive's bucketing v1, ``(hive_hash(cols) & 0x7fffffff) % N`` where
``hive_hash`` folds ``31 * h + hashcode(col)`` from 0 (NULL hashes to 0); or
with ``version=2`` Hive 3's bucketing v2, each column's hash Murmur3 (seed
104729) over its big-endian bytes.

The SQL twin of this module is the ``spark_bucketing.bucket_id_expr`` macro;
the tests check both against the files Spark writes and against Hive's own code.
"""

from __future__ import annotations

import datetime as _dt
import struct
from collections.abc import Sequence
from typing import Any

from spark_bucketing.contracts import HIVE_HASH_TYPES, normalize_type

FAMILIES = ("hive", "spark")
__all__ = ["FAMILIES", "HIVE_HASH_TYPES", "SPARK_HASH_TYPES", "bucket_id", "normalize_type"]


#: Types this module can hash for the ``spark`` family.
SPARK_HASH_TYPES = HIVE_HASH_TYPES + ("timestamp",)


_EPOCH = _dt.date(1970, 1, 1)
_SPARK_SEED = 42
_M32 = 0xFFFFFFFF


class UnsupportedTypeError(ValueError):
    """A column type that a hash family cannot bucket reproducibly."""


def _to_int32(x: int) -> int:
    x &= _M32
    return x - 0x1_0000_0000 if x & 0x8000_0000 else x


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def _mix_k1(k1: int) -> int:
    k1 = (k1 * 0xCC9E2D51) & _M32
    k1 = _rotl32(k1, 15)
    return (k1 * 0x1B873593) & _M32


def _mix_h1(h1: int, k1: int) -> int:
    h1 ^= k1
    h1 = _rotl32(h1, 13)
    return (h1 * 5 + 0xE6546B64) & _M32


def _fmix(h1: int, length: int) -> int:
    h1 ^= length
    h1 ^= h1 >> 16
    h1 = (h1 * 0x85EBCA6B) & _M32
    h1 ^= h1 >> 13
    h1 = (h1 * 0xC2B2AE35) & _M32
    h1 ^= h1 >> 16
    return h1


def murmur3_int(value: int, seed: int) -> int:
    h1 = _mix_h1(seed & _M32, _mix_k1(value & _M32))
    return _to_int32(_fmix(h1, 4))


def murmur3_long(value: int, seed: int) -> int:
    v = value & 0xFFFF_FFFF_FFFF_FFFF
    h1 = _mix_h1(seed & _M32, _mix_k1(v & _M32))
    h1 = _mix_h1(h1, _mix_k1(v >> 32))
    return _to_int32(_fmix(h1, 8))


def murmur3_bytes(data: bytes, seed: int) -> int:
    """Spark's ``hashUnsafeBytes``: 4-byte little-endian words, then each tail
    byte mixed on its own as a signed int (unlike reference Murmur3)."""
    h1 = seed & _M32
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i : i + 4], "little")))
    for b in data[aligned:]:
        h1 = _mix_h1(h1, _mix_k1(b - 256 if b > 127 else b))
    return _to_int32(_fmix(h1, len(data)))


def _float_bits(value: float) -> int:
    if value != value:  # Java canonicalizes every NaN
        return 0x7FC00000
    return struct.unpack(">i", struct.pack(">f", value))[0]


def _double_bits(value: float) -> int:
    if value != value:
        return 0x7FF8000000000000
    return struct.unpack(">q", struct.pack(">d", value))[0]


def _days(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        value = value.date()
    if isinstance(value, _dt.date):
        return (value - _EPOCH).days
    return int(value)


def _micros(value: Any) -> int:
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=_dt.UTC)
        delta = value - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
        return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds
    return int(value)


def spark_hash(values: Sequence[Any], types: Sequence[str], seed: int = _SPARK_SEED) -> int:
    """Spark SQL ``hash(c1, c2, ...)``: Murmur3 chained over columns, NULL skipped."""
    h = seed
    for value, type_name in zip(values, types, strict=True):
        t = normalize_type(type_name)
        if value is None:
            continue
        if t in ("tinyint", "smallint", "int"):
            h = murmur3_int(int(value), h)
        elif t == "boolean":
            h = murmur3_int(1 if value else 0, h)
        elif t == "date":
            h = murmur3_int(_days(value), h)
        elif t == "bigint":
            h = murmur3_long(int(value), h)
        elif t == "timestamp":
            h = murmur3_long(_micros(value), h)
        elif t == "float":
            h = murmur3_int(0 if value == 0 else _float_bits(float(value)), h)
        elif t == "double":
            h = murmur3_long(0 if value == 0 else _double_bits(float(value)), h)
        elif t == "string":
            h = murmur3_bytes(str(value).encode("utf-8"), h)
        else:
            raise UnsupportedTypeError(
                f"cannot compute Spark's hash of a {type_name!r} column; supported types: {', '.join(SPARK_HASH_TYPES)}"
            )
    return h


def hive_hashcode(value: Any, type_name: str) -> int:
    """Hive's ``ObjectInspectorUtils.hashCode`` for one primitive value."""
    t = normalize_type(type_name)
    if value is None:
        return 0
    if t in ("tinyint", "smallint", "int"):
        return _to_int32(int(value))
    if t == "boolean":
        return 1 if value else 0
    if t == "date":
        return _to_int32(_days(value))
    if t == "bigint":
        v = int(value) & 0xFFFF_FFFF_FFFF_FFFF
        return _to_int32(v ^ (v >> 32))
    if t == "float":
        return _float_bits(float(value))
    if t == "double":
        v = _double_bits(float(value)) & 0xFFFF_FFFF_FFFF_FFFF
        return _to_int32(v ^ (v >> 32))
    if t == "string":
        r = 0
        for b in str(value).encode("utf-8"):
            r = (31 * r + (b - 256 if b > 127 else b)) & _M32
        return _to_int32(r)
    raise UnsupportedTypeError(
        f"a {type_name!r} column is not hashed by Spark the way Hive hashes it; "
        f"supported types for bucket_hash='hive': {', '.join(HIVE_HASH_TYPES)}"
    )


_HIVE_V2_SEED = 104729


def hive_murmur3(data: bytes, seed: int = _HIVE_V2_SEED) -> int:
    """Hive's ``Murmur3.hash32`` (the class Hive's and Trino's v2 bucketing
    call): reference Murmur3 x86_32 but for the tail, whose bytes Hive widens
    as signed bytes before combining them."""
    h1 = seed & _M32
    aligned = len(data) - len(data) % 4
    for i in range(0, aligned, 4):
        h1 = _mix_h1(h1, _mix_k1(int.from_bytes(data[i : i + 4], "little")))
    tail = [b - 256 if b > 127 else b for b in data[aligned:]]
    if tail:
        k1 = 0
        for shift, b in reversed(list(zip((0, 8, 16), tail, strict=False))):
            k1 ^= (b << shift) & _M32
        h1 ^= _mix_k1(k1)
    return _to_int32(_fmix(h1, len(data)))


def hive_v2_hashcode(value: Any, type_name: str) -> int:
    """Hive 3's ``ObjectInspectorUtils.hashCodeMurmur`` for one primitive value
    (bucketing_version 2): Murmur3 over the value's big-endian bytes."""
    t = normalize_type(type_name)
    if value is None:
        return 0
    if t == "boolean":
        return 1 if value else 0
    if t == "tinyint":
        return _to_int32(int(value))
    if t == "smallint":
        return hive_murmur3(struct.pack(">h", int(value)))
    if t in ("int", "date"):
        return hive_murmur3(struct.pack(">i", _days(value) if t == "date" else int(value)))
    if t == "bigint":
        return hive_murmur3(struct.pack(">q", int(value)))
    # Sic: Hive writes the canonical bits *as a number* (putFloat(floatToIntBits(f))).
    if t == "float":
        return hive_murmur3(struct.pack(">f", float(_float_bits(float(value)))))
    if t == "double":
        return hive_murmur3(struct.pack(">d", float(_double_bits(float(value)))))
    if t == "string":
        return hive_murmur3(str(value).encode("utf-8"))
    raise UnsupportedTypeError(
        f"Hive's bucketing v2 hash of a {type_name!r} column is not supported; "
        f"supported types for bucketing_version=2: {', '.join(HIVE_HASH_TYPES)}"
    )


def hive_hash(values: Sequence[Any], types: Sequence[str], version: int = 1) -> int:
    """Hive's ``getBucketHashCode``: ``h = 31 * h + hashcode(col)`` from 0,
    by ``hive_hashcode`` (bucketing version 1) or ``hive_v2_hashcode`` (2)."""
    field = hive_v2_hashcode if version == 2 else hive_hashcode
    h = 0
    for value, type_name in zip(values, types, strict=True):
        h = (31 * h + field(value, type_name)) & _M32
    return _to_int32(h)


def bucket_id(values: Sequence[Any], types: Sequence[str], num_buckets: int, family: str, version: int = 1) -> int:
    """The bucket a row lands in, as Spark's writer numbers the file;
    ``version``: Hive's bucketing version, for the ``hive`` family."""
    if num_buckets < 1:
        raise ValueError(f"num_buckets must be >= 1, got {num_buckets}")
    if len(values) != len(types):
        raise ValueError(f"{len(values)} values but {len(types)} types")
    if version not in (1, 2) or (version == 2 and family != "hive"):
        raise ValueError(f"bucketing version {version!r}: Hive's hash has versions 1 and 2, Spark's only one")
    if family == "spark":
        return spark_hash(values, types) % num_buckets  # Python % is pmod
    if family == "hive":
        return (hive_hash(values, types, version) & 0x7FFFFFFF) % num_buckets
    raise ValueError(f"unknown hash family {family!r}; expected one of {FAMILIES}")
