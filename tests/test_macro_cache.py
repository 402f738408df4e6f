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

MACRO = (
    "{% macro greet(names, sep=', ') %}"
    "{%- set seen = [] -%}{%- for n in names if n not in seen -%}{%- do seen.append(n) -%}{%- endfor -%}"
    "hello {{ seen | map('upper') | join(sep) }}{% endmacro %}"
)


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
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([kept.name, writing.name])


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
    dbts = jinja.TemplateCache.get_node_template
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
    assert [p.name for p in expected.iterdir()] == [macro_cache.cache_key(MACRO)]
    # Without XDG_CACHE_HOME: ~/.cache, as the XDG base directory rules say.
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert macro_cache.default_directory() == tmp_path / "home" / ".cache" / "spark-bucketing" / "macros"


def test_a_default_directory_that_cannot_be_used_leaves_dbt_as_it_is(monkeypatch, compiles, tmp_path):
    dbts = jinja.TemplateCache.get_node_template
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
