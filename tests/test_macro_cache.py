"""The macro cache (spark_bucketing.macro_cache) with dbt-common's own Jinja
environment: a macro loaded from the cache renders as dbt's own compile of it,
a later process loads instead of compiling, and what must not be loaded is
compiled again or refused. That dbt installs it through the package's plugin
in a real install is in tests/test_clean_install.py."""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
from dbt_common.clients import jinja
from dbt_common.exceptions import CompilationError

from spark_bucketing import macro_cache

pytestmark = pytest.mark.fast  # the fast tier: `bash scripts/test --fast` (docs/development.md)

MACRO = (
    "{% macro greet(names, sep=', ') %}"
    "{%- set seen = [] -%}{%- for n in names if n not in seen -%}{%- do seen.append(n) -%}{%- endfor -%}"
    "hello {{ seen | map('upper') | join(sep) }}{% endmacro %}"
)


# dbt-common's own method, also where an earlier dbt command of this process installed the cache (the suite's).
DBTS = getattr(jinja.TemplateCache.get_node_template, "__wrapped__", jinja.TemplateCache.get_node_template)


def node(source: str = MACRO) -> SimpleNamespace:
    return SimpleNamespace(macro_sql=source, name="greet", package_name="test", unique_id="macro.test.greet")


def greet(template: jinja2.Template, *args) -> str:
    return template.make_module(vars={}).__dict__["dbt_macro__greet"](*args)


@pytest.fixture
def compiles(monkeypatch) -> list[str]:
    """The sources Jinja compiles from here on (dbt's TemplateCache is put back after the test)."""
    monkeypatch.setattr(jinja.TemplateCache, "get_node_template", jinja.TemplateCache.get_node_template)
    seen: list[str] = []
    compile_ = jinja2.Environment.compile

    def counted(env, source, *args, **kwargs):
        seen.append(source)
        return compile_(env, source, *args, **kwargs)

    monkeypatch.setattr(jinja2.Environment, "compile", counted)
    return seen


def test_a_cached_macro_renders_as_dbts_own_compile(tmp_path, compiles):
    own = jinja.get_template(MACRO, {})
    cached = macro_cache.compiled_template(tmp_path, node())
    assert greet(cached, ["a", "b", "a"]) == greet(own, ["a", "b", "a"]) == "hello A, B"
    assert greet(cached, ["x", "y"], "+") == "hello X+Y"
    assert [p.name for p in tmp_path.iterdir()] == [macro_cache.cache_key(MACRO)]


def test_a_later_process_loads_the_macro_instead_of_compiling_it(tmp_path, compiles):
    macro_cache.install(tmp_path)
    first = jinja.TemplateCache().get_node_template(node())
    assert compiles == [MACRO]
    written = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    # A fresh TemplateCache is what a new dbt process starts with.
    later = jinja.TemplateCache().get_node_template(node())
    assert compiles == [MACRO], "loaded from the file, not compiled"
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == written
    assert greet(later, ["q"]) == greet(first, ["q"]) == "hello Q"


def test_an_edited_macro_compiles_afresh(tmp_path, compiles):
    macro_cache.install(tmp_path)
    edited = MACRO.replace("hello", "hi")
    assert greet(jinja.TemplateCache().get_node_template(node()), ["a"]) == "hello A"
    assert greet(jinja.TemplateCache().get_node_template(node(edited)), ["a"]) == "hi A"
    assert compiles == [MACRO, edited]
    assert len(list(tmp_path.iterdir())) == 2


@pytest.mark.parametrize("damage", ["truncated", "another format", "another source"])
def test_a_file_that_does_not_load_is_compiled_again(tmp_path, compiles, damage):
    macro_cache.compiled_template(tmp_path, node())
    (path,) = tmp_path.iterdir()
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "another format":  # Jinja's magic names its bytecode format and Python's version
        path.write_bytes(b"j2" + bytes([data[2] ^ 1]) + data[3:])
    else:  # the same name holding another macro's code: the checksum of the source tells
        other = macro_cache.compiled_template(tmp_path, node(MACRO.replace("hello", "bye")))
        assert greet(other, ["a"]) == "bye A"
        path.write_bytes((tmp_path / macro_cache.cache_key(MACRO.replace("hello", "bye"))).read_bytes())
    compiles.clear()
    assert greet(macro_cache.compiled_template(tmp_path, node()), ["a"]) == "hello A"
    assert compiles == [MACRO]
    # Written again, whole: the next load compiles nothing.
    assert greet(macro_cache.compiled_template(tmp_path, node()), ["b"]) == "hello B"
    assert compiles == [MACRO]


def test_a_macro_that_does_not_compile_fails_as_in_dbt_and_writes_nothing(tmp_path):
    broken = MACRO.replace("{%- endfor -%}", "")
    with pytest.raises(CompilationError) as ours:
        macro_cache.compiled_template(tmp_path, node(broken))
    with pytest.raises(CompilationError) as dbts:
        jinja.get_template(broken, {}, node=node(broken))
    assert str(ours.value).splitlines()[:2] == str(dbts.value).splitlines()[:2]
    assert list(tmp_path.iterdir()) == []


def test_threads_compiling_one_macro_at_once_leave_one_whole_file(tmp_path, compiles):
    # dbt's threads share no lock around compiling; each writer's part file is its own.
    with ThreadPoolExecutor(8) as pool:
        templates = list(pool.map(lambda _: macro_cache.compiled_template(tmp_path, node()), range(16)))
    assert {greet(t, ["a"]) for t in templates} == {"hello A"}
    assert [p.name for p in tmp_path.iterdir()] == [macro_cache.cache_key(MACRO)]
    compiles.clear()
    assert greet(macro_cache.compiled_template(tmp_path, node()), ["b"]) == "hello B"
    assert compiles == []


def test_a_killed_writers_part_file_goes_and_a_writing_ones_stays(monkeypatch, tmp_path, compiles):
    macro_cache.compiled_template(tmp_path, node())
    (kept,) = tmp_path.iterdir()
    killed, writing = tmp_path / f"{kept.name}.a1.part", tmp_path / f"{kept.name}.b2.part"
    killed.write_bytes(b"half")
    writing.write_bytes(b"half")
    old = time.time() - macro_cache.STALE_PART_SECONDS - 60
    os.utime(killed, (old, old))
    monkeypatch.setenv(macro_cache.ENV, str(tmp_path))
    assert macro_cache.install_from_environment() == tmp_path
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([kept.name, writing.name, macro_cache.PRUNED_STAMP])


def test_a_directory_others_may_write_to_is_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    with pytest.raises(macro_cache.MacroCacheError) as e:
        macro_cache.checked_directory(str(shared))
    assert f"{macro_cache.ENV}={shared}: others may write to that directory" in str(e.value)
    assert f"Fix: chmod go-w {shared}" in str(e.value)
    with pytest.raises(macro_cache.MacroCacheError, match="cannot create or read that directory"):
        macro_cache.checked_directory(str(Path(__file__)))
    made = macro_cache.checked_directory(str(tmp_path / "new" / "cache"))
    assert made.is_dir() and made.stat().st_mode & 0o777 == 0o700


def test_installing_again_replaces_the_directory_and_does_not_stack(tmp_path, compiles):
    # dbt's own method, also where an earlier dbt command in this process installed the cache (the suite's runs).
    dbts = getattr(jinja.TemplateCache.get_node_template, "__wrapped__", jinja.TemplateCache.get_node_template)
    macro_cache.install(tmp_path / "a")
    macro_cache.install(tmp_path / "b")
    assert jinja.TemplateCache.get_node_template.__wrapped__ is dbts
    (tmp_path / "b").mkdir()
    jinja.TemplateCache().get_node_template(node())
    assert not (tmp_path / "a").exists() and len(list((tmp_path / "b").iterdir())) == 1


def test_off_installs_nothing(monkeypatch, compiles, tmp_path):
    dbts = DBTS
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for value in ("off", "OFF", " off "):
        monkeypatch.setenv(macro_cache.ENV, value)
        assert macro_cache.install_from_environment() is None
    assert jinja.TemplateCache.get_node_template is dbts
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", [None, ""])
def test_without_the_variable_the_users_cache_directory_holds_the_macros(monkeypatch, compiles, tmp_path, value):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    if value is None:
        monkeypatch.delenv(macro_cache.ENV, raising=False)
    else:
        monkeypatch.setenv(macro_cache.ENV, value)
    expected = tmp_path / "xdg" / "spark-bucketing" / "macros"
    assert macro_cache.install_from_environment() == expected
    assert expected.stat().st_mode & 0o777 == 0o700
    jinja.TemplateCache().get_node_template(node())
    assert sorted(p.name for p in expected.iterdir()) == [macro_cache.cache_key(MACRO), macro_cache.PRUNED_STAMP]
    # Without XDG_CACHE_HOME: ~/.cache, as the XDG base directory rules say.
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert macro_cache.default_directory() == tmp_path / "home" / ".cache" / "spark-bucketing" / "macros"


def test_a_default_directory_that_cannot_be_used_leaves_dbt_as_it_is(monkeypatch, compiles, tmp_path):
    dbts = DBTS
    monkeypatch.delenv(macro_cache.ENV, raising=False)
    shared = tmp_path / "shared" / "spark-bucketing" / "macros"
    shared.mkdir(parents=True)
    os.chmod(shared, 0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "shared"))
    assert macro_cache.install_from_environment() is None
    monkeypatch.setenv("XDG_CACHE_HOME", __file__)  # a file: the directory cannot be made
    assert macro_cache.install_from_environment() is None
    assert jinja.TemplateCache.get_node_template is dbts
    assert list(shared.iterdir()) == []
    # Named by the variable, the same directory is the user's request: refused with the fix.
    monkeypatch.setenv(macro_cache.ENV, str(shared))
    with pytest.raises(macro_cache.MacroCacheError, match="others may write to that directory"):
        macro_cache.install_from_environment()
    assert jinja.TemplateCache.get_node_template is dbts


# Issue 85: the cache runs only code the user alone could have written, deletes only its own files, obeys
# `off` and dbt's macro debugging at every command, and stays bounded.

NOBODY = 65534  # another user's uid: the suite runs as root, which may give a file to any uid
PLANTED = MACRO.replace("hello", "PLANTED")


def plant(directory: Path, mode: int = 0o644, uid: int | None = None) -> Path:
    """A file named and checksummed for MACRO that holds PLANTED's code: what anyone who can write a file
    there can make (the key is a hash of the source and public versions)."""
    env = jinja.get_environment(node())
    key = macro_cache.cache_key(MACRO)
    bucket = macro_cache.Bucket(env, key, checksum=key)
    bucket.code = env.compile(PLANTED)
    path = directory / key
    path.write_bytes(bucket.bytecode_to_string())
    os.chmod(path, mode)
    if uid is not None:
        os.chown(path, uid, -1)
    return path


@pytest.fixture
def warnings(monkeypatch) -> list[str]:
    seen: list[str] = []
    monkeypatch.setattr(macro_cache, "_warn", seen.append)
    return seen


def test_a_directory_of_another_user_is_refused_and_its_code_never_runs(monkeypatch, tmp_path, compiles, warnings):
    dbts = DBTS
    theirs = tmp_path / "theirs"
    theirs.mkdir(mode=0o755)
    plant(theirs, uid=NOBODY)
    os.chown(theirs, NOBODY, -1)
    monkeypatch.setenv(macro_cache.ENV, str(theirs))
    with pytest.raises(macro_cache.MacroCacheError) as e:
        macro_cache.install_from_environment()
    assert f"{macro_cache.ENV}={theirs}: that directory is owned by uid {NOBODY}, not by you" in str(e.value)
    assert "Fix: name a directory of your own" in str(e.value)
    assert jinja.TemplateCache.get_node_template is dbts
    # The default directory of another user: skipped, with a warning that names it.
    monkeypatch.delenv(macro_cache.ENV)
    default = tmp_path / "xdg" / "spark-bucketing" / "macros"
    default.mkdir(parents=True, mode=0o755)
    plant(default, uid=NOBODY)
    os.chown(default, NOBODY, -1)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert macro_cache.install_from_environment() is None
    assert jinja.TemplateCache.get_node_template is dbts
    (warning,) = warnings
    assert f"the default directory {default}: that directory is owned by uid {NOBODY}" in warning
    assert greet(jinja.TemplateCache().get_node_template(node()), ["a"]) == "hello A"


@pytest.mark.parametrize("owner", ["mode 666", "mode 664", "another uid"])
def test_a_file_others_could_write_is_not_loaded_but_compiled_and_replaced(tmp_path, compiles, warnings, owner):
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    mode = {"mode 666": 0o666, "mode 664": 0o664}.get(owner, 0o644)
    planted = plant(mine, mode, NOBODY if owner == "another uid" else None)
    compiles.clear()
    macro_cache.install(mine)
    assert greet(jinja.TemplateCache().get_node_template(node()), ["a"]) == "hello A"
    assert compiles == [MACRO]
    (warning,) = warnings
    assert f"not loading {planted}" in warning and "Compiling that macro again and replacing the file" in warning
    st = planted.stat()
    assert (st.st_uid, st.st_mode & 0o777) == (os.geteuid(), 0o600)
    # Replaced by the user's own file: the next process loads it.
    compiles.clear()
    assert greet(jinja.TemplateCache().get_node_template(node()), ["b"]) == "hello B"
    assert compiles == [] and len(warnings) == 1
    # The same planted file, the user's alone, is loaded: the refusal above is the owner's and the mode's.
    plant(mine, 0o600)
    assert greet(jinja.TemplateCache().get_node_template(node()), ["c"]) == "PLANTED C"


def test_a_symbolic_link_in_the_directory_is_not_followed(tmp_path, compiles, warnings):
    mine, elsewhere = tmp_path / "mine", tmp_path / "elsewhere"
    mine.mkdir(mode=0o700)
    elsewhere.mkdir(mode=0o700)
    (mine / macro_cache.cache_key(MACRO)).symlink_to(plant(elsewhere, 0o600))
    compiles.clear()
    macro_cache.install(mine)
    assert greet(jinja.TemplateCache().get_node_template(node()), ["a"]) == "hello A"
    assert compiles == [MACRO] and len(warnings) == 1
    assert not (mine / macro_cache.cache_key(MACRO)).is_symlink()


@pytest.mark.parametrize("kind", ["directory", "named pipe", "file that cannot be opened"])
def test_an_entry_that_is_not_a_readable_file_never_fails_the_command(tmp_path, compiles, warnings, kind):
    """A directory, a named pipe or a file whose open fails where a macro's file would be: the macro compiles
    as dbt compiles it, and the entry is replaced by the macro's file where a rename can replace it (not a
    directory, which is then compiled again in every command)."""
    mine = tmp_path / "mine"
    mine.mkdir(mode=0o700)
    entry = mine / macro_cache.cache_key(MACRO)
    if kind == "directory":
        entry.mkdir()
        (entry / "inside").write_text("x")
    elif kind == "named pipe":
        os.mkfifo(entry, 0o600)
    else:
        entry.symlink_to(entry)  # open fails (ELOOP), as it does on a file one may not read
    macro_cache.install(mine)
    compiled = []
    for names in (["a"], ["b"]):
        compiles.clear()
        assert greet(jinja.TemplateCache().get_node_template(node()), names) == f"hello {names[0].upper()}"
        compiled.append(compiles == [MACRO])
    if kind == "directory":
        assert compiled == [True, True] and len(warnings) == 2
        assert entry.is_dir() and (entry / "inside").read_text() == "x"
    else:
        assert compiled == [True, False] and len(warnings) == 1
        assert entry.is_file() and not entry.is_symlink()
    assert all(f"not loading {entry}" in w for w in warnings)


def test_the_parents_the_cache_creates_are_the_users_alone(tmp_path):
    made = macro_cache.checked_directory(str(tmp_path / "a" / "b" / "c"))
    for path in (tmp_path / "a", tmp_path / "a" / "b", made):
        assert path.stat().st_mode & 0o777 == 0o700, path
    # A directory of one's own that is group-writable is refused as one others may write to.
    group = tmp_path / "group"
    group.mkdir()
    os.chmod(group, 0o770)
    with pytest.raises(macro_cache.MacroCacheError, match=r"others may write to that directory \(mode 770\)"):
        macro_cache.checked_directory(str(group))


def test_it_deletes_only_files_of_its_own_naming(monkeypatch, tmp_path, compiles):
    macro_cache.compiled_template(tmp_path, node())
    (code,) = tmp_path.iterdir()
    two_hours_ago = time.time() - 7200
    theirs = ["movie.mkv.part", "notes.txt", f"{code.name}.part", "x" * 64, f"{'a' * 63}.abc.part"]
    for name in [*theirs, f"{code.name}.k3j_x9q2.part"]:
        (tmp_path / name).write_bytes(b"someone's")
        os.utime(tmp_path / name, (two_hours_ago, two_hours_ago))
    # A year-old file of another's naming beside the cache's own year-old code: only the code goes.
    year_ago = time.time() - 365 * 86400
    os.utime(code, (year_ago, year_ago))
    os.utime(tmp_path / "notes.txt", (year_ago, year_ago))
    monkeypatch.setenv(macro_cache.ENV, str(tmp_path))
    macro_cache.install_from_environment()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*theirs, macro_cache.PRUNED_STAMP])


def test_off_and_macro_debugging_hold_from_the_command_that_sets_them(monkeypatch, tmp_path, compiles):
    cache = tmp_path / "cache"
    monkeypatch.setenv(macro_cache.ENV, str(cache))
    monkeypatch.delenv(macro_cache.DEBUGGING_ENV, raising=False)
    monkeypatch.setattr(jinja, "MACRO_DEBUGGING", False)
    dbts = DBTS
    assert macro_cache.install_from_environment() == cache
    monkeypatch.setenv(macro_cache.ENV, "off")
    assert macro_cache.install_from_environment() is None
    assert jinja.TemplateCache.get_node_template is dbts
    monkeypatch.setenv(macro_cache.ENV, str(cache))
    assert macro_cache.install_from_environment() == cache
    monkeypatch.setattr(jinja, "MACRO_DEBUGGING", True)  # what dbt's --macro-debugging flag sets
    assert macro_cache.install_from_environment() is None
    assert jinja.TemplateCache.get_node_template is dbts


def test_the_cache_is_bounded_by_age_and_count(monkeypatch, tmp_path):
    monkeypatch.setattr(macro_cache, "MAX_FILES", 10)
    now = time.time()
    names = [macro_cache.cache_key(f"macro {i}") for i in range(15)]
    for age, name in enumerate(names):  # names[0] is the newest
        (tmp_path / name).write_bytes(b"code")
        os.utime(tmp_path / name, (now - age * 3600, now - age * 3600))
    stale = tmp_path / macro_cache.cache_key("a macro edited long ago")
    stale.write_bytes(b"code")
    os.utime(stale, (now - macro_cache.MAX_AGE_SECONDS - 60,) * 2)
    macro_cache.prune(tmp_path, now)
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([*names[:10], macro_cache.PRUNED_STAMP])
    # Within a day of that prune a command start reads the stamp alone, and scans again after.
    for name in names[10:]:
        (tmp_path / name).write_bytes(b"code")
        os.utime(tmp_path / name, (now - 86400 * 2,) * 2)
    macro_cache.prune(tmp_path, now + 3600)
    assert len(list(tmp_path.iterdir())) == 16
    macro_cache.prune(tmp_path, now + macro_cache.PRUNE_INTERVAL_SECONDS + 1)
    assert len(list(tmp_path.iterdir())) == 11


def test_a_loaded_file_is_kept_as_used(tmp_path, compiles):
    macro_cache.compiled_template(tmp_path, node())
    (code,) = tmp_path.iterdir()
    old = time.time() - macro_cache.MAX_AGE_SECONDS + 3600  # pruned in an hour unless used
    os.utime(code, (old, old))
    compiles.clear()
    macro_cache.compiled_template(tmp_path, node())
    assert compiles == [] and time.time() - code.stat().st_mtime < 60


def test_each_dbt_command_in_one_process_reads_the_variables_anew(monkeypatch, tmp_path):
    """Three dbt commands in one process, as orchestrators run dbt (dbtRunner), each after an edit of a macro
    that a model calls while dbt parses: a cache directory, then `off`, then dbt's macro debugging, then the
    directory again. Only the first and the last write the edited macro's code. dbt parses without Spark."""
    from dbt.cli.main import dbtRunner

    project = tmp_path / "project"
    (project / "models").mkdir(parents=True)
    (project / "macros").mkdir()
    (project / "dbt_project.yml").write_text("name: harmless\nversion: '1.0'\nconfig-version: 2\nprofile: harmless\n")
    (project / "profiles.yml").write_text(
        "harmless:\n  target: t\n  outputs:\n    t: {type: spark, method: session, host: localhost, schema: s}\n"
    )
    (project / "models" / "m.sql").write_text("select {{ tag_value() }} as v\n")
    cache = tmp_path / "cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(macro_cache.DEBUGGING_ENV, raising=False)

    def parse(edit: str, **env: str) -> set[str]:
        (project / "macros" / "tag.sql").write_text("{% macro tag_value() %}'" + edit + "'{% endmacro %}\n")
        for name in (macro_cache.ENV, macro_cache.DEBUGGING_ENV):
            if name in env:
                monkeypatch.setenv(name, env[name])
            else:
                monkeypatch.delenv(name, raising=False)
        argv = ["parse", "--no-partial-parse", "--project-dir", str(project), "--profiles-dir", str(project)]
        result = dbtRunner().invoke([*argv, "--log-path", str(tmp_path / "logs")])
        assert result.success, result.exception
        return set(os.listdir(cache)) if cache.exists() else set()

    def key(edit: str) -> str:
        return macro_cache.cache_key("{% macro tag_value() %}'" + edit + "'{% endmacro %}")

    first = parse("one", **{macro_cache.ENV: str(cache)})
    assert key("one") in first
    assert parse("two", **{macro_cache.ENV: "off"}) == first
    assert parse("three", **{macro_cache.ENV: str(cache), macro_cache.DEBUGGING_ENV: "1"}) == first
    last = parse("four", **{macro_cache.ENV: str(cache)})
    assert last - first == {key("four")}
    assert not (tmp_path / "xdg").exists()  # no command fell back to the default directory
