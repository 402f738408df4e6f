"""dbt's compiled macros kept on disk, across dbt processes (on unless turned off).

dbt compiles a macro's Jinja the first time a process calls it and keeps the
result for that process only (dbt-common's `TemplateCache`). A `dbt run` of
one bucketed model calls about 160 of this package's macros, 140 KB of
Jinja, and compiling them is most of what such a run costs over stock
dbt-spark's on a warm Spark (docs/benchmarks.md). The package's dbt plugin
(`dbt_spark_bucketing`, which dbt imports because of its name) makes dbt
keep each compiled macro in a directory and load it in later processes
instead of compiling it again: every macro dbt compiles that way, the
package's, dbt's and the adapter's. The directory is the user's cache
directory's `spark-bucketing/macros` unless `SPARK_BUCKETING_MACRO_CACHE`
names another; `SPARK_BUCKETING_MACRO_CACHE=off` turns the cache off.

A file is what Jinja's own bytecode cache writes for a template (its magic
names Jinja's bytecode format and Python's version; a checksum follows),
named by a hash of the source and of the versions of Python, Jinja and
dbt-common that compiled it, which is also its checksum. An edited macro or an upgrade
compiles afresh; a file that does not load (truncated, another format) is
compiled again and replaced. Loading a file runs the code it holds, so the
directory must be writable by its owner alone: a directory that others can
write to is refused (named by the variable: an error; the default: no cache).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jinja2
from dbt_common.clients import jinja
from jinja2.bccache import Bucket

ENV = "SPARK_BUCKETING_MACRO_CACHE"
OFF = "off"


class MacroCacheError(Exception):
    """The cache directory cannot be used: what is wrong and how to fix it."""


# What compiles a macro, read once a process: the key of every macro holds it.
VERSIONS = f"{sys.version}\0{jinja2.__version__}\0{version('dbt-common')}"


def cache_key(source: str) -> str:
    """The file name of a macro's compiled code, and the checksum the file holds:
    its source and the versions that compile it."""
    return hashlib.sha256(f"{VERSIONS}\0{source}".encode()).hexdigest()


def checked_directory(value: str) -> Path:
    """The directory `value` names, created for its owner alone if it does not exist;
    MacroCacheError where others may write to it."""
    directory = Path(value).expanduser()
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        mode = directory.stat().st_mode
    except OSError as e:  # a file of that name among them
        raise MacroCacheError(
            f"{ENV}={value}: cannot create or read that directory ({e}). Fix: name a directory of your own"
        ) from e
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise MacroCacheError(
            f"{ENV}={value}: others may write to that directory, and dbt would run the code they put there."
            f" Fix: chmod go-w {directory}, or name a directory of your own"
        )
    return directory


def compiled_template(directory: Path, node: Any) -> jinja2.Template:
    """The template dbt-common's `get_template` makes of `node.macro_sql`, its
    code loaded from `directory` where a file there holds it, else compiled and written there."""
    source = node.macro_sql
    env = jinja.get_environment(node)
    key = cache_key(source)
    bucket = Bucket(env, key, checksum=key)
    path = directory / bucket.key
    try:
        with path.open("rb") as f:
            bucket.load_bytecode(f)
    except FileNotFoundError:
        pass
    except Exception:  # a truncated file fails in pickle or marshal: compile again
        bucket.reset()
    if bucket.code is None:
        with jinja.catch_jinja(node):
            bucket.code = env.compile(source)
        _write(path, bucket.bytecode_to_string())
    # What Environment.from_string(source, globals={}) does with the code it compiles.
    return env.template_class.from_code(env, bucket.code, env.make_globals({}), None)


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all: dbt's threads and other dbt processes may write the
    same file at once. A cache that cannot be written (a full disk) leaves the
    run as it would be without the cache."""
    part = None
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f"{path.name}.", suffix=".part", delete=False) as f:
            part = Path(f.name)
            f.write(data)
        os.replace(part, path)
    except OSError:
        if part is not None:
            part.unlink(missing_ok=True)


# A part file this old belongs to no writer: writing one takes milliseconds.
STALE_PART_SECONDS = 3600


def remove_stale_parts(directory: Path) -> None:
    """Deletes the part files of writers that were killed mid-write (a part file is renamed or
    deleted by its writer otherwise)."""
    cutoff = time.time() - STALE_PART_SECONDS
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.name.endswith(".part") and entry.stat(follow_symlinks=False).st_mtime < cutoff:
                    Path(entry.path).unlink(missing_ok=True)
    except OSError:  # another process removed it first, or the directory went: the cache works without this
        pass


def install(directory: Path) -> None:
    """dbt-common's TemplateCache, from here on in this process, compiles
    through `directory`. Once per process: later calls change the directory."""
    cache = jinja.TemplateCache
    original = getattr(cache.get_node_template, "__wrapped__", cache.get_node_template)
    # dbt's macro debugging puts the compiled source in linecache as it compiles: leave that to dbt.
    if jinja.MACRO_DEBUGGING:
        return

    def get_node_template(self, node):
        template = self.file_cache.get(node.macro_sql)
        if template is None:
            template = self.file_cache[node.macro_sql] = compiled_template(directory, node)
        return template

    get_node_template.__wrapped__ = original
    cache.get_node_template = get_node_template


def default_directory() -> Path | None:
    """The cache's directory where the variable is not set: `spark-bucketing/macros` in the user's
    cache directory (XDG_CACHE_HOME, else ~/.cache); None where there is no home directory."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        return (Path(base) if base else Path.home() / ".cache") / "spark-bucketing" / "macros"
    except RuntimeError:
        return None


def install_from_environment() -> Path | None:
    """Installs the cache in the directory ENV names, else in the default one, unless ENV is `off`;
    the directory it installed, if any. A directory ENV names that cannot be used fails
    (MacroCacheError, the user asked for it); a default one that cannot be used leaves dbt as it is."""
    value = os.environ.get(ENV, "").strip()
    if value.lower() == OFF:
        return None
    if value:
        directory = checked_directory(value)
    else:
        default = default_directory()
        if default is None:
            return None
        try:
            directory = checked_directory(str(default))
        except MacroCacheError:
            return None
    remove_stale_parts(directory)
    install(directory)
    return directory
