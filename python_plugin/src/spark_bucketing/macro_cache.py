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
names another; `SPARK_BUCKETING_MACRO_CACHE=off` turns the cache off. Both,
and `DBT_MACRO_DEBUGGING`, are read at the start of every dbt command, also
of commands run one after another in one process (dbtRunner).

A file is what Jinja's own bytecode cache writes for a template (its magic
names Jinja's bytecode format and Python's version; a checksum follows),
named by a hash of the source and of the versions of Python, Jinja and
dbt-common that compiled it, which is also its checksum. An edited macro or an upgrade
compiles afresh; a file that does not load (truncated, another format) is
compiled again and replaced.

Loading a file runs the code it holds, so the cache trusts only what the
user alone could have written: a directory the user owns and only the user
may write to (named by the variable, anything else is an error; the default
directory is skipped with a warning), and in it only files the user owns
and only the user may write to (any other is not loaded: it is compiled
again and replaced, with a warning). The directories the cache creates are
the user's alone. It deletes only files of its own naming, and keeps their
number bounded (prune()).
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

import jinja2
from dbt_common.clients import jinja
from dbt_common.events.base_types import EventLevel
from dbt_common.events.functions import fire_event
from dbt_common.events.types import Note
from jinja2.bccache import Bucket

ENV = "SPARK_BUCKETING_MACRO_CACHE"
OFF = "off"
# dbt's variable: compiled code then goes to Python's linecache, which dbt does itself.
DEBUGGING_ENV = "DBT_MACRO_DEBUGGING"

# The cache's own files: a macro's compiled code, named by its key; a writer's part file,
# `<key>.<random>.part` (tempfile's names); the stamp whose time is the last prune's.
_CODE_NAME = re.compile(r"[0-9a-f]{64}")
_PART_NAME = re.compile(r"[0-9a-f]{64}\.[A-Za-z0-9_]+\.part")
PRUNED_STAMP = "spark-bucketing-pruned"

# A part file this old belongs to no writer: writing one takes milliseconds.
STALE_PART_SECONDS = 3600
# A file no command loaded for this long is an edited macro's or an older version's.
MAX_AGE_SECONDS = 30 * 86400
# A project's full build compiles a few hundred macros; this is many projects' and versions' worth.
MAX_FILES = 4000
# How often a command start scans the directory to prune it; the other starts read one stamp.
PRUNE_INTERVAL_SECONDS = 86400
# A loaded file's time is set to now when it is older than this, so that its time says when it was
# last used (an update a day at most, not one per load).
TOUCH_AFTER_SECONDS = 86400


class MacroCacheError(Exception):
    """The cache directory cannot be used: what is wrong and how to fix it."""


# What compiles a macro, read once a process: the key of every macro holds it.
VERSIONS = f"{sys.version}\0{jinja2.__version__}\0{version('dbt-common')}"


def cache_key(source: str) -> str:
    """The file name of a macro's compiled code, and the checksum the file holds:
    its source and the versions that compile it."""
    return hashlib.sha256(f"{VERSIONS}\0{source}".encode()).hexdigest()


def _warn(message: str) -> None:
    fire_event(Note(msg=f"spark-bucketing macro cache: {message}"), level=EventLevel.WARN)


def not_private(st: os.stat_result) -> str | None:
    """Why a file or directory with this stat is not the current user's alone, or None."""
    if st.st_uid != os.geteuid():
        return f"it is owned by uid {st.st_uid}, not by you (uid {os.geteuid()})"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"others may write to it (mode {stat.S_IMODE(st.st_mode):o})"
    return None


def _make_directories(directory: Path) -> None:
    """Creates `directory` and each missing parent for its owner alone (mkdir's `parents` would make
    the parents with the default mode)."""
    for path in reversed([directory, *directory.parents]):
        if not path.exists():
            path.mkdir(mode=0o700, exist_ok=True)


def checked_directory(value: str, label: str | None = None) -> Path:
    """The directory `value` names, created for its owner alone if it does not exist;
    MacroCacheError where it is not the current user's alone (its message starts with `label`, by
    default the variable's setting)."""
    label = f"{ENV}={value}" if label is None else label
    directory = Path(value).expanduser().absolute()
    try:
        _make_directories(directory)
        st = directory.stat()
    except OSError as e:  # a file of that name among them, or no permission
        raise MacroCacheError(
            f"{label}: cannot create or read that directory ({e}). Fix: name a directory of your own"
        ) from e
    if not stat.S_ISDIR(st.st_mode):
        raise MacroCacheError(
            f"{label}: cannot create or read that directory (a file). Fix: name a directory of your own"
        )
    if st.st_uid != os.geteuid():
        raise MacroCacheError(
            f"{label}: that directory is owned by uid {st.st_uid}, not by you (uid {os.geteuid()}),"
            " and dbt would run the code its owner puts there. Fix: name a directory of your own"
        )
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise MacroCacheError(
            f"{label}: others may write to that directory (mode {stat.S_IMODE(st.st_mode):o}),"
            f" and dbt would run the code they put there. Fix: chmod go-w {directory}, or name a directory"
            " of your own"
        )
    return directory


def _load(bucket: Bucket, path: Path) -> None:
    """Fills `bucket` with the code `path` holds if the file is the user's alone and holds this
    macro's code for these versions; leaves it empty otherwise."""
    try:
        # O_NONBLOCK: a named pipe in the file's place would otherwise block the command until a writer comes.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return
    except OSError as e:  # a symbolic link (ELOOP), or not readable
        _warn(f"not loading {path} ({e}); compiling that macro again")
        return
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        # Checked on the descriptor, before a file object is made of it: Python refuses to make one of a
        # directory (IsADirectoryError), which would fail the dbt command. The entry is not the cache's to remove.
        os.close(fd)
        _warn(f"not loading {path}: it is not a regular file. Compiling that macro again and leaving the entry")
        return
    problem = not_private(st)
    if problem is not None:
        os.close(fd)
        _warn(f"not loading {path}: {problem}. Compiling that macro again and replacing the file")
        return
    with os.fdopen(fd, "rb") as f:
        try:
            bucket.load_bytecode(f)
        except Exception:  # a truncated file fails in pickle or marshal: compile again
            bucket.reset()
        if bucket.code is not None and time.time() - st.st_mtime > TOUCH_AFTER_SECONDS:
            try:
                os.utime(fd)
            except OSError:
                pass


def compiled_template(directory: Path, node: Any) -> jinja2.Template:
    """The template dbt-common's `get_template` makes of `node.macro_sql`, its
    code loaded from `directory` where a file there holds it, else compiled and written there."""
    source = node.macro_sql
    env = jinja.get_environment(node)
    key = cache_key(source)
    bucket = Bucket(env, key, checksum=key)
    path = directory / bucket.key
    _load(bucket, path)
    if bucket.code is None:
        with jinja.catch_jinja(node):
            bucket.code = env.compile(source)
        _write(path, bucket.bytecode_to_string())
    # What Environment.from_string(source, globals={}) does with the code it compiles.
    return env.template_class.from_code(env, bucket.code, env.make_globals({}), None)


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all: dbt's threads and other dbt processes may write the
    same file at once. The file is the user's alone (tempfile makes it so). A cache that cannot
    be written (a full disk) leaves the run as it would be without the cache."""
    part = None
    try:
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f"{path.name}.", suffix=".part", delete=False) as f:
            part = Path(f.name)
            f.write(data)
        os.replace(part, path)
    except OSError:
        if part is not None:
            part.unlink(missing_ok=True)


def prune(directory: Path, now: float | None = None) -> None:
    """Deletes, of the cache's own files only: killed writers' part files, files no command loaded
    for MAX_AGE_SECONDS, and the oldest past MAX_FILES. Scans the directory at most once per
    PRUNE_INTERVAL_SECONDS (a stamp file's time); other command starts read the stamp alone."""
    now = time.time() if now is None else now
    stamp = directory / PRUNED_STAMP
    try:
        if now - stamp.stat().st_mtime < PRUNE_INTERVAL_SECONDS:
            return
        os.utime(stamp, (now, now))
    except FileNotFoundError:
        try:
            stamp.touch(mode=0o600)
            os.utime(stamp, (now, now))
        except OSError:
            return
    except OSError:
        return
    kept: list[tuple[float, str]] = []
    try:
        with os.scandir(directory) as entries:
            for entry in entries:
                if _PART_NAME.fullmatch(entry.name):
                    limit = STALE_PART_SECONDS
                elif _CODE_NAME.fullmatch(entry.name):
                    limit = MAX_AGE_SECONDS
                else:  # not the cache's: never touched
                    continue
                mtime = entry.stat(follow_symlinks=False).st_mtime
                if now - mtime > limit:
                    Path(entry.path).unlink(missing_ok=True)
                elif limit == MAX_AGE_SECONDS:
                    kept.append((mtime, entry.path))
        kept.sort()
        for _, path in kept[: max(0, len(kept) - MAX_FILES)]:
            Path(path).unlink(missing_ok=True)
    except OSError:  # another process removed a file first, or the directory went: the cache works without this
        pass


def _dbts_method() -> Any:
    method = jinja.TemplateCache.get_node_template
    return getattr(method, "__wrapped__", method)


def install(directory: Path) -> None:
    """dbt-common's TemplateCache, from here on in this process, compiles
    through `directory`. Installing again changes the directory; uninstall() puts dbt's method back."""

    def get_node_template(self, node):
        template = self.file_cache.get(node.macro_sql)
        if template is None:
            template = self.file_cache[node.macro_sql] = compiled_template(directory, node)
        return template

    get_node_template.__wrapped__ = _dbts_method()  # type: ignore[attr-defined]
    jinja.TemplateCache.get_node_template = get_node_template  # type: ignore[method-assign]


def uninstall() -> None:
    """dbt-common's own TemplateCache method again: no file is read or written from here on."""
    jinja.TemplateCache.get_node_template = _dbts_method()  # type: ignore[method-assign]


def default_directory() -> Path | None:
    """The cache's directory where the variable is not set: `spark-bucketing/macros` in the user's
    cache directory (XDG_CACHE_HOME, else ~/.cache); None where there is no home directory."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    try:
        return (Path(base) if base else Path.home() / ".cache") / "spark-bucketing" / "macros"
    except RuntimeError:
        return None


def macro_debugging() -> bool:
    """Whether this dbt command debugs macros (its flag, which dbt sets before the plugins start, or the
    variable): dbt's own compile then puts the compiled source in linecache."""
    return bool(jinja.MACRO_DEBUGGING) or bool(os.environ.get(DEBUGGING_ENV))


def install_from_environment() -> Path | None:
    """At the start of every dbt command: installs the cache in the directory ENV names, else in the
    default one, unless ENV is `off` or the command debugs macros (then dbt's own method, also where an
    earlier command of this process installed the cache); the directory it installed, if any. A
    directory ENV names that cannot be used fails (MacroCacheError, the user asked for it); a default
    one that cannot be used leaves dbt as it is, with a warning."""
    uninstall()
    value = os.environ.get(ENV, "").strip()
    if value.lower() == OFF or macro_debugging():
        return None
    if value:
        directory = checked_directory(value)
    else:
        default = default_directory()
        if default is None:
            return None
        try:
            directory = checked_directory(str(default), label=f"the default directory {default}")
        except MacroCacheError as e:
            _warn(f"not used: {e} (or set {ENV}). dbt compiles its macros anew in every command until then")
            return None
    prune(directory)
    install(directory)
    return directory
