"""A bucketed table's files on disk: which bucket each file claims by its name."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from urllib.parse import unquote, urlparse

from spark_bucketing.contracts import BUCKET_IN_NAME, HIVE_BUCKET_IN_NAME


def bucket_of(file_name: str, family: str = "spark") -> int | None:
    """The bucket id a reader of a `family` ("spark" or "hive") table reads in a file's name."""
    m = (HIVE_BUCKET_IN_NAME if family == "hive" else BUCKET_IN_NAME).match(file_name)
    return int(m.group(1)) if m else None


def local_path(location: str) -> Path:
    """A catalog location (`file:/...` URI or plain path) as a local path."""
    return Path(urlparse(location).path)


def input_file_path(uri: str) -> Path:
    """The file on disk behind Spark's input_file_name(), a URI: a folder's
    own `%2F` shows there as `%252F` and a space as `%20`, a `+` stays a `+`.
    The SQL twin is the spark_bucketing.file_dir_expr macro."""
    return Path(unquote(urlparse(uri).path))


def data_files(location: Path) -> list[Path]:
    """Data files under a table location, skipping hidden and `_`-prefixed
    entries as Spark does (`_SUCCESS`, `.hive-staging...`)."""
    return sorted(
        p
        for p in location.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(location).parts)
    )


def files_per_bucket(location: Path, family: str = "spark") -> Counter:
    """(partition directory, bucket id or None) -> number of files, the ids read as a `family` table's readers do."""
    counts: Counter = Counter()
    for f in data_files(location):
        counts[(str(f.parent.relative_to(location)), bucket_of(f.name, family))] += 1
    return counts
