"""The package's dbt plugin does no harm to a project that does not use the package (issue 85).

Installing the Python package makes dbt load its plugin (`dbt_spark_bucketing`) in every command of that
environment, for every project: the macro cache, the listing retry and the constraint list. dbt's own
generic adapter test classes (dbt-tests-adapter) that apply to dbt-spark on `method: session` with Parquet
tables run here three times each, in this order, on the worker's Spark:

- `Without`: dbt as it is without the Python package. dbt finds plugins by importing every module named
  `dbt_*`; here it is not shown the package's, and the plugin's changes to dbt are undone first, so no
  code of the package runs in dbt (the projects do not install the dbt package either).
- `Compiling`: with the plugin, the macro cache on in a directory of this module's, dbt's in-memory
  templates dropped first: every macro the class calls is compiled and written to the directory.
- `Cached`: the same, a second time: the macros are loaded from the files the first pass wrote, as a
  later dbt process loads them.

Every test must have the same outcome in the three: the tests that fail on stock dbt-spark with Parquet
are marked so (strict), for all three, and listed in docs/tests.md."""

from __future__ import annotations

import os

import dbt.plugins.manager
import pytest
from dbt.tests.adapter.aliases.test_aliases import BaseAliasErrors, BaseAliases, BaseSameAliasDifferentSchemas
from dbt.tests.adapter.basic.test_adapter_methods import BaseAdapterMethod
from dbt.tests.adapter.basic.test_base import BaseSimpleMaterializations
from dbt.tests.adapter.basic.test_empty import BaseEmpty
from dbt.tests.adapter.basic.test_ephemeral import BaseEphemeral
from dbt.tests.adapter.basic.test_generic_tests import BaseGenericTests
from dbt.tests.adapter.basic.test_incremental import BaseIncremental
from dbt.tests.adapter.basic.test_singular_tests import BaseSingularTests
from dbt.tests.adapter.basic.test_singular_tests_ephemeral import BaseSingularTestsEphemeral
from dbt.tests.adapter.basic.test_table_materialization import BaseTableMaterialization
from dbt.tests.adapter.basic.test_validate_connection import BaseValidateConnection
from dbt.tests.adapter.caching.test_caching import (
    BaseCachingLowercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseCachingUppercaseModel,
    BaseNoPopulateCache,
)
from dbt.tests.adapter.dbt_show.test_dbt_show import BaseShowDoesNotHandleDoubleLimit, BaseShowLimit
from dbt.tests.adapter.empty.test_empty import BaseTestEmpty
from dbt.tests.adapter.ephemeral.test_ephemeral import BaseEphemeralMulti
from dbt.tests.adapter.hooks.test_model_hooks import BaseDuplicateHooksInConfigs
from dbt.tests.adapter.unit_testing.test_case_insensitivity import BaseUnitTestCaseInsensivity
from dbt.tests.adapter.unit_testing.test_invalid_input import BaseUnitTestInvalidInput
from dbt.tests.fixtures.project import *  # noqa: F403 (dbt's functional-test fixtures: project, adapter, ...)
from dbt_common.clients import jinja

from spark_bucketing import dbt_constraints, dbt_listing, dbt_run_end, macro_cache
from tests.support.dbt_adapter_classes import (  # noqa: F401 (fixtures)
    base_fixture,
    dbt_profile_target,
    logs_dir,
    project_config,
    single_threaded,
)

PLUGIN_MODULE = "dbt_spark_bucketing"


@pytest.fixture(scope="module")
def cache_directory(tmp_path_factory):
    return tmp_path_factory.mktemp("no_harm") / "macros"


def _without_the_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    """dbt as without the Python package: its plugin module not among the `dbt_*` modules dbt loads (dbt's
    test fixtures keep the modules it found in _MODULES_CACHE), and what the plugin changed in dbt undone."""
    found = dbt.plugins.manager.PluginManager.get_prefixed_modules()
    assert PLUGIN_MODULE in found  # what the other passes load
    without = {name: module for name, module in found.items() if name != PLUGIN_MODULE}
    monkeypatch.setattr(dbt.plugins.manager, "_MODULES_CACHE", without)
    monkeypatch.setattr(dbt.plugins.manager.PluginManager, "get_prefixed_modules", classmethod(lambda cls: without))
    macro_cache.uninstall()
    dbt_listing.uninstall()
    dbt_constraints.uninstall()
    dbt_run_end.uninstall()


class Plugin:
    """The pass a class runs in: `Without`, `Compiling` or `Cached` (the module's docstring)."""

    plugin: str = ""

    @pytest.fixture(scope="class", autouse=True)
    def plugin_pass(self, cache_directory):
        with pytest.MonkeyPatch.context() as monkeypatch:
            if self.plugin == "Without":
                _without_the_plugin(monkeypatch)
            else:
                monkeypatch.setenv(macro_cache.ENV, str(cache_directory))
                # What a new dbt process starts with: no template compiled in memory.
                jinja.template_cache.clear()
            written = set(os.listdir(cache_directory)) if cache_directory.exists() else set()
            if self.plugin == "Cached":
                assert len(written) > 20, "the class's Compiling pass, just before, wrote its macros"
            yield
            if self.plugin == "Cached":  # every macro loaded from the files: none compiled and written
                assert set(os.listdir(cache_directory)) == written
        jinja.template_cache.clear()

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return project_config(type(self), self)


CLASSES = [
    BaseSimpleMaterializations,
    BaseSingularTests,
    BaseSingularTestsEphemeral,
    BaseEmpty,
    BaseEphemeral,
    BaseIncremental,
    BaseGenericTests,
    BaseAdapterMethod,
    BaseValidateConnection,
    BaseTableMaterialization,
    BaseCachingLowercaseModel,
    BaseCachingUppercaseModel,
    BaseCachingSelectedSchemaOnly,
    BaseNoPopulateCache,
    BaseAliases,
    BaseAliasErrors,
    BaseSameAliasDifferentSchemas,
    BaseShowLimit,
    BaseShowDoesNotHandleDoubleLimit,
    BaseTestEmpty,
    BaseEphemeralMulti,
    BaseDuplicateHooksInConfigs,
    BaseUnitTestCaseInsensivity,
    BaseUnitTestInvalidInput,
]

# Postgres in dbt's fixtures -> Spark: class -> {fixture: {old: new}}.
SPARK_SQL: dict[type, dict[str, dict[str, str]]] = {
    cls: {"macros": {"::text": "::string"}} for cls in (BaseAliases, BaseAliasErrors, BaseSameAliasDifferentSchemas)
}
# Attributes of a class that name Postgres's answer: Spark's.
SPARK_ATTRIBUTES: dict[type, dict[str, str]] = {
    BaseShowDoesNotHandleDoubleLimit: {"DATABASE_ERROR_MESSAGE": "Syntax error at or near 'limit'"},
}

CACHED_TMP_VIEW = (
    "dbt-spark's incremental materialization leaves its temporary view `<model>__dbt_tmp` (a session view, with"
    " no schema) in dbt's relation cache: the cache holds two relations where the test expects one"
)
# The tests that fail on stock dbt-spark (session, Parquet), and why: class (without Base) :: test -> reason.
# Strict, in all three passes: one that starts to pass, or passes in one pass only, fails the suite.
STOCK_FAILS: dict[str, str] = {
    **{
        f"{name}::test_cache": CACHED_TMP_VIEW
        for name in ("CachingLowercaseModel", "CachingUppercaseModel", "CachingSelectedSchemaOnly", "NoPopulateCache")
    },
    "EphemeralMulti::test_ephemeral_multi": (
        'the test compares the compiled SQL with Postgres\'s (`create view "dbt"."<schema>"...`); dbt-spark\'s'
        " is `create or replace view <schema>...`"
    ),
}


def _spark_fixture(name: str, replacements: dict[str, str]):
    """The dbt class's fixture `name` (files by name) with `replacements` made in each file."""

    @pytest.fixture(scope="class")
    def files(self):
        own = base_fixture(type(self), name, self)
        for old, new in replacements.items():
            own = {file: text.replace(old, new) for file, text in own.items()}
        return own

    files.__name__ = name
    return files


@pytest.fixture(autouse=True)
def _expected_failures(request):
    if request.cls is None:
        return
    name = request.cls.__name__.removeprefix("Test")
    for side in ("Without", "Compiling", "Cached"):
        name = name.removesuffix(side)
    reason = STOCK_FAILS.get(f"{name}::{request.function.__name__}")
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


for _base in CLASSES:
    for _pass in ("Without", "Compiling", "Cached"):
        _name = f"Test{_base.__name__.removeprefix('Base')}{_pass}"
        _own = {"plugin": _pass, **SPARK_ATTRIBUTES.get(_base, {})}
        _own.update({f: _spark_fixture(f, r) for f, r in SPARK_SQL.get(_base, {}).items()})
        globals()[_name] = type(_name, (Plugin, _base), _own)
