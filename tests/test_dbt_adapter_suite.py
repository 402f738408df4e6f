"""dbt's own adapter tests (dbt-tests-adapter) on the package, beside stock
dbt-spark: each class of the incremental family runs twice, once as stock
dbt-spark runs it (Parquet, method session) and once with its incremental
models routed to the package (the documented routing file, `buckets` and
`clustered_by` per model in dbt_project.yml, the README's is_incremental
macro). Both run dbt in this process (dbt's `run_dbt`) on the worker's
Spark. Every test that passes on stock passes with the package; the stock
tests that fail because of Spark are marked so (strict: one that starts to
pass fails the suite) and listed in docs/tests.md."""

from __future__ import annotations

from pathlib import Path

import pytest
from dbt.tests.adapter.basic.test_incremental import (
    BaseIncremental,
    BaseIncrementalBadStrategy,
    BaseIncrementalNotSchemaChange,
)
from dbt.tests.adapter.constraints.test_constraints import (
    BaseIncrementalConstraintsColumnsEqual,
    BaseIncrementalConstraintsRollback,
    BaseIncrementalContractSqlHeader,
)
from dbt.tests.adapter.incremental.test_incremental_merge_exclude_columns import BaseMergeExcludeColumns
from dbt.tests.adapter.incremental.test_incremental_microbatch import BaseMicrobatch
from dbt.tests.adapter.incremental.test_incremental_on_schema_change import BaseIncrementalOnSchemaChange
from dbt.tests.adapter.incremental.test_incremental_predicates import BaseIncrementalPredicates
from dbt.tests.adapter.incremental.test_incremental_unique_id import BaseIncrementalUniqueKey
from dbt.tests.fixtures.project import *  # noqa: F403 (dbt's functional-test fixtures: project, adapter, ...)

from harness.dbt_project import IS_INCREMENTAL, ROUTING
from harness.spark import REPO_ROOT, session_settings
from tests.support.dbt_adapter_classes import (  # noqa: F401 (fixtures)
    base_fixture,
    dbt_profile_target,
    logs_dir,
    project_config,
    single_threaded,
)


class Stock:
    """dbt-spark as it is: Parquet tables; `config` adds to the class's project settings (a strategy);
    `session`: settings of the Spark session for the class's tests."""

    config: dict = {}
    session: dict = {}

    @pytest.fixture(scope="class", autouse=True)
    def session_settings(self, spark):
        with session_settings(spark, self.session):
            yield

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return project_config(type(self), self, self.config)


class Package(Stock):
    """The same tests with the project's incremental models routed to the package: `buckets` per model."""

    #: model name -> its bucket columns
    clustered_by: dict[str, list[str]] = {}

    @pytest.fixture(scope="class")
    def packages(self):
        return {"packages": [{"local": str(REPO_ROOT)}]}

    @pytest.fixture(scope="class")
    def macros(self):
        return {
            **base_fixture(type(self), "macros", self),
            "incremental.sql": ROUTING,
            "is_incremental.sql": IS_INCREMENTAL,
        }

    @pytest.fixture(scope="class")
    def project_config_update(self):
        own = project_config(type(self), self, self.config)
        project = own.setdefault("models", {}).setdefault(own.get("name", "test"), {})
        for path, columns in self.clustered_by.items():
            *folders, model = path.split("/")
            node = project
            for folder in folders:
                node = node.setdefault(folder, {})
            node[model] = {"+buckets": 4, "+clustered_by": columns, "+bucket_hash": "spark"}
        # Without the package's end-of-run hook: dbt's tests count a command's results, and a hook is one.
        return own

    @pytest.fixture(scope="class")
    def project(self, project_setup, project_files):
        """dbt's project with the package installed as `dbt deps` installs a local one (a link): the command
        itself would reset dbt's adapters, which the class's fixtures go on using."""
        packages = Path(project_setup.project_root) / "dbt_packages"
        packages.mkdir(exist_ok=True)
        (packages / "spark_bucketing").symlink_to(REPO_ROOT, target_is_directory=True)
        return project_setup


MERGE_NEEDS_DELTA = "dbt-spark's merge needs file_format delta, iceberg or hudi; Parquet is refused"
SEED_NONE = "dbt-spark's session seeds load an empty CSV field as the string 'None', where the expected table is NULL"
BAD_STRATEGY = (
    "the test expects dbt's own 'could not find an incremental strategy macro' message; dbt-spark (and the "
    "package, naming the config) refuse the strategy with a message of their own"
)
SQL_HEADER = (
    "dbt sends the model's sql_header in one statement with the contract's query, which Spark parses as one SET "
    "(the time zone 'Asia/Kolkata';select ...)"
)
# The tests that fail on stock dbt-spark, and why: test id (class without Stock/Package :: test) -> reason.
# Strict: one that starts to pass fails the suite, so the table in docs/tests.md stays true.
STOCK_FAILS: dict[str, str] = {
    "IncrementalBadStrategy::test_incremental_invalid_strategy": BAD_STRATEGY,
    "OnSchemaChange::test_run_incremental_append_new_columns": (
        "dbt-spark's append selects every column of the table from the new rows, and the new query dropped one"
    ),
    "OnSchemaChange::test_run_incremental_sync_all_columns": "Spark cannot drop a column of a Parquet table",
    "Predicates::test__incremental_predicates": MERGE_NEEDS_DELTA,
    "PredicatesAlias::test__incremental_predicates": MERGE_NEEDS_DELTA,
    "MergeExcludeColumns::test__merge_exclude_columns": MERGE_NEEDS_DELTA,
    "Microbatch::test_run_with_event_time": "dbt-spark's microbatch needs partition_by, which the test's model lacks",
    "ConstraintsRollback::test__constraints_enforcement_rollback": (
        "a Parquet table does not enforce NOT NULL: stock's second run writes the row that breaks the constraint"
    ),
    "ContractSqlHeader::test__contract_sql_header": SQL_HEADER,
    **{
        f"UniqueKey::{test}": MERGE_NEEDS_DELTA
        for test in (
            "test__bad_unique_key",
            "test__empty_unique_key_list",
            "test__one_unique_key",
            "test__bad_unique_key_list",
            "test__no_unique_keys",
            "test__empty_str_unique_key",
            "test__unary_unique_key_list",
            "test__duplicated_unary_unique_key_list",
            "test__trinary_unique_key_list",
            "test__trinary_unique_key_list_no_update",
        )
    },
}
# The tests that fail with the package too: each fails on stock, for a reason that is not the materialization's.
PACKAGE_FAILS: dict[str, str] = {
    "IncrementalBadStrategy::test_incremental_invalid_strategy": BAD_STRATEGY,
    "ContractSqlHeader::test__contract_sql_header": SQL_HEADER,
    **{
        f"UniqueKey::{test}": SEED_NONE
        for test in (
            "test__one_unique_key",
            "test__unary_unique_key_list",
            "test__duplicated_unary_unique_key_list",
            "test__trinary_unique_key_list",
        )
    },
}


@pytest.fixture(autouse=True)
def _expected_failures(request):
    if request.cls is None:
        return
    name = request.cls.__name__.removeprefix("Test")
    side = STOCK_FAILS if name.endswith("Stock") else PACKAGE_FAILS
    reason = side.get(f"{name.removesuffix('Stock').removesuffix('Package')}::{request.function.__name__}")
    if reason:
        request.applymarker(pytest.mark.xfail(strict=True, reason=reason))


class SparkTypes(BaseIncrementalConstraintsColumnsEqual):
    """The column types of the contract tests as Spark names them (dbt's are Postgres's), and as dbt-spark's
    session cursor reports them in a contract's mismatch."""

    @pytest.fixture
    def string_type(self):
        return "string"

    @pytest.fixture
    def int_type(self):
        return "int"

    @pytest.fixture
    def data_types(self, schema_int_type, int_type, string_type):
        # sql_column_value, schema_data_type, error_data_type
        return [
            ["1", schema_int_type, int_type],
            ["'1'", string_type, string_type],
            ["true", "boolean", "boolean"],
            ["array('a', 'b', 'c')", "array<string>", "array<string>"],
            ["array(1, 2, 3)", "array<int>", "array<int>"],
            ["6.45", "decimal(3,2)", "decimal(3,2)"],
            ["cast('2019-01-01' as date)", "date", "date"],
            ["cast('2019-01-01' as timestamp)", "timestamp", "timestamp"],
        ]


class SparkRollback(BaseIncrementalConstraintsRollback):
    """The rollback test, its failed run's error as a Spark table's: the row that breaks the not_null constraint."""

    @pytest.fixture(scope="class")
    def expected_error_messages(self):
        return ["not_null constraint on column id"]


MERGE = {"+incremental_strategy": "merge"}
# (name, dbt's class, extra project configs, package: model -> bucket columns)
CLASSES = [
    ("Incremental", BaseIncremental, {}, {"incremental": ["id"]}),
    (
        "IncrementalNotSchemaChange",
        BaseIncrementalNotSchemaChange,
        {},
        {"incremental_not_schema_change": ["user_id_current_time"]},
    ),
    ("IncrementalBadStrategy", BaseIncrementalBadStrategy, {}, {"incremental": ["id"]}),
    (
        "OnSchemaChange",
        BaseIncrementalOnSchemaChange,
        {},
        {
            m: ["id"]
            for m in (
                "incremental_ignore",
                "incremental_ignore_target",
                "incremental_append_new_columns",
                "incremental_append_new_columns_target",
                "incremental_append_new_columns_remove_one",
                "incremental_append_new_columns_remove_one_target",
                "incremental_sync_all_columns",
                "incremental_sync_all_columns_target",
                "incremental_fail",
                "incremental_sync_remove_only",
                "incremental_sync_remove_only_target",
            )
        },
    ),
    (
        "Predicates",
        BaseIncrementalPredicates,
        {**MERGE, "+incremental_predicates": ["dbt_internal_dest.id != 2"]},
        {"delete_insert_incremental_predicates": ["id"]},
    ),
    (
        "PredicatesAlias",
        BaseIncrementalPredicates,
        {**MERGE, "+predicates": ["dbt_internal_dest.id != 2"]},
        {"delete_insert_incremental_predicates": ["id"]},
    ),
    (
        "UniqueKey",
        BaseIncrementalUniqueKey,
        MERGE,
        {
            m: ["state"]
            for m in (
                "trinary_unique_key_list",
                "nontyped_trinary_unique_key_list",
                "unary_unique_key_list",
                "not_found_unique_key",
                "empty_unique_key_list",
                "no_unique_key",
                "empty_str_unique_key",
                "str_unique_key",
                "duplicated_unary_unique_key_list",
                "not_found_unique_key_list",
                "expected/one_str__overwrite",
                "expected/unique_key_list__inplace_overwrite",
            )
        },
    ),
    ("MergeExcludeColumns", BaseMergeExcludeColumns, MERGE, {"merge_exclude_columns": ["id"]}),
    ("Microbatch", BaseMicrobatch, {}, {"microbatch_model": ["id"]}),
    (
        "ConstraintsColumnsEqual",
        SparkTypes,
        {},
        {"my_model_wrong_order": ["id"], "my_model_wrong_name": ["id"]},
    ),
    ("ConstraintsRollback", SparkRollback, {}, {"my_model": ["id"]}),
    ("ContractSqlHeader", BaseIncrementalContractSqlHeader, {}, {"my_model_contract_sql_header": ["column_name"]}),
]

# The unique-key tests' own SQL inserts strings into a date column, as Postgres casts them; Spark 4's ANSI
# store assignment refuses it, before any model runs. Spark's legacy policy casts them as Postgres does.
SESSIONS = {"UniqueKey": {"spark.sql.storeAssignmentPolicy": "LEGACY"}}

# Postgres in dbt's model files -> Spark, as dbt-spark's own subclasses write them.
SPARK_SQL = {
    "ConstraintsColumnsEqual": {"data_type: text": "data_type: string"},
    "ConstraintsRollback": {"data_type: text": "data_type: string"},
    "ContractSqlHeader": {"data_type: text": "data_type: string", "set session time zone": "set time zone"},
}


def _spark_models(replacements: dict[str, str]):
    """The class's dbt model files with `replacements` made."""

    @pytest.fixture(scope="class")
    def models(self):
        files = base_fixture(type(self), "models", self)
        for old, new in replacements.items():
            files = {name: text.replace(old, new) for name, text in files.items()}
        return files

    return models


for _name, _base, _config, _clustered in CLASSES:
    _own = {"config": _config, "session": SESSIONS.get(_name, {})}
    if _name in SPARK_SQL:
        _own["models"] = _spark_models(SPARK_SQL[_name])
    globals()[f"Test{_name}Stock"] = type(f"Test{_name}Stock", (Stock, _base), dict(_own))
    globals()[f"Test{_name}Package"] = type(
        f"Test{_name}Package", (Package, _base), {**_own, "clustered_by": _clustered}
    )


def test_the_package_fails_only_tests_that_fail_on_stock():
    assert set(PACKAGE_FAILS) <= set(STOCK_FAILS)
    classes = {name for name, *_ in CLASSES}
    assert {key.split("::")[0] for key in STOCK_FAILS} <= classes
