"""The names and formats shared by the macros, the Python package and the
Spark extension are the same in each language, and live in one place per
language (spark_bucketing/contracts.py, scala/Contracts.scala, one macro
each). Reads sources; no JVM."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

from spark_bucketing import contracts
from spark_bucketing.files import bucket_of

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python_plugin" / "src" / "spark_bucketing"
SCALA = PACKAGE / "scala"


def _macro_body(name: str) -> str:
    for path in (ROOT / "macros").rglob("*.sql"):
        m = re.search(r"{%\s*macro\s+" + name + r"\(.*?{%\s*endmacro\s*%}", path.read_text(), re.S)
        if m:
            return m.group(0)
    raise AssertionError(f"macro {name} not found")


def _macro_return_string(name: str) -> str:
    (value,) = re.findall(r"return\('([^']*)'\)", _macro_body(name).split("{%- endif -%}")[-1])
    return value


def _macro_return_string_of(name: str, branch: str) -> str:
    """The string a macro returns in its `if ... == '<branch>'` branch."""
    (value,) = re.findall(r"==\s*'" + branch + r"'\s*-%}{{ return\('([^']*)'\) }}", _macro_body(name))
    return value


def _scala_vals() -> dict[str, str]:
    text = (SCALA / "Contracts.scala").read_text()
    out = {name: value for name, value in re.findall(r'val (\w+) = "([^"]*)"\n', text)}
    out.update(re.findall(r'val (\w+) = """(.*?)"""', text))
    return out


def test_metadata_keys_agree():
    assert _macro_return_string("metadata_prefix") == contracts.METADATA_PREFIX
    scala = _scala_vals()
    assert scala["FormatVersionKey"] == contracts.FORMAT_VERSION_KEY
    assert scala["PartitionKeyPrefix"] == contracts.PARTITION_KEY_PREFIX
    # The macros build the keys from the prefix with these suffixes.
    body = _macro_body("metadata_properties") + _macro_body("partition_key")
    for key in (contracts.FORMAT_VERSION_KEY, contracts.SPEC_KEY, contracts.TABLE_KEY, contracts.PARTITION_KEY_PREFIX):
        assert f"'{key.removeprefix(contracts.METADATA_PREFIX)}'" in body


def test_format_2_names_agree():
    scala = _scala_vals()
    assert scala["PartitionRecordKey"] == contracts.PARTITION_RECORD_KEY
    assert scala["PartitionRecordsFunction"] == contracts.PARTITION_RECORDS_FUNCTION
    assert _macro_return_string("records_function") == contracts.PARTITION_RECORDS_FUNCTION
    assert _macro_return_string("summary_key") == contracts.SUMMARY_KEY


def test_extension_switch_agrees():
    assert _scala_vals()["ExtensionSwitch"] == contracts.EXTENSION_SWITCH
    assert _scala_vals()["SupersetKeysSwitch"] == contracts.SUPERSET_KEYS_SWITCH
    assert _scala_vals()["CloneRatioSetting"] == contracts.CLONE_RATIO_SETTING
    assert _scala_vals()["CloneRatioDefault"] == contracts.CLONE_RATIO_DEFAULT
    assert _scala_vals()["MergedFilesSetting"] == contracts.MERGED_FILES_SETTING
    assert _scala_vals()["MergedFilesDefault"] == contracts.MERGED_FILES_DEFAULT
    assert _scala_vals()["ForeignTablesSwitch"] == contracts.FOREIGN_TABLES_SWITCH
    assert _scala_vals()["ForeignTablesVerify"] == contracts.FOREIGN_TABLES_VERIFY
    assert _macro_return_string("extension_switch") == contracts.EXTENSION_SWITCH
    assert _macro_return_string("extension_class") == contracts.EXTENSION_CLASS


#: The extension's statement words, row markers and function names the macros send: (Scala val, macro, contract).
STATEMENT_NAMES = [
    ("SwitchStatement", "switch_statement", contracts.SWITCH_STATEMENT),
    ("CleanStatement", "clean_statement", contracts.CLEAN_STATEMENT),
    ("WriteFolderStatement", "write_folder_statement", contracts.WRITE_FOLDER_STATEMENT),
    ("MarkLockStatement", "mark_lock_statement", contracts.MARK_LOCK_STATEMENT),
    ("DescribeRequest", "describe_request", contracts.DESCRIBE_REQUEST),
    ("PropertyRow", "property_row", contracts.PROPERTY_ROW),
    ("SettingRow", "setting_row", contracts.SETTING_ROW),
    ("QueryColumnRow", "query_column_row", contracts.QUERY_COLUMN_ROW),
    ("TableFilesFunction", "table_files_function", contracts.TABLE_FILES_FUNCTION),
    ("FolderReadFunction", "folder_read_function", contracts.FOLDER_READ_FUNCTION),
    ("HiveHashV2Function", "hive_hash_v2_function", contracts.HIVE_HASH_V2_FUNCTION),
    ("HiveHashFunction", "hive_hash_v1_function", contracts.HIVE_HASH_FUNCTION),
    ("HiveWriterHashFunction", "hive_writer_hash_function", contracts.HIVE_WRITER_HASH_FUNCTION),
]


@pytest.mark.parametrize(("scala", "macro", "value"), STATEMENT_NAMES, ids=[m for _, m, _ in STATEMENT_NAMES])
def test_statement_names_agree(scala, macro, value):
    assert _scala_vals()[scala] == value
    assert _macro_return_string(macro) == value


def test_route_column_agrees():
    # The extension knows the macros' routing shuffle by this column (OneTaskRoutes).
    assert _scala_vals()["RouteColumn"] == _macro_return_string("route_column")


def test_hive_hash_types_agree():
    body = _macro_body("hive_hash_types")
    assert tuple(re.findall(r"'(\w+)'", body)) == contracts.HIVE_HASH_TYPES
    # The types the extension's v2 hash takes: the same list.
    (listed,) = re.findall(r"TypeNames: Seq\[String\] = Seq\(([^)]*)\)", (SCALA / "HiveBucketingV2.scala").read_text())
    assert tuple(re.findall(r'"(\w+)"', listed)) == contracts.HIVE_HASH_TYPES


def test_hive_read_types_agree():
    # The types the extension reads a Hive-hash table bucketed by, per version, are the checker's.
    text = (SCALA / "HiveHashKeys.scala").read_text()
    for version in (1, 2):
        (listed,) = re.findall(rf"val V{version}: Seq\[String\] = Seq\(([^)]*)\)", text)
        assert tuple(re.findall(r'"(\w+)"', listed)) == contracts.HIVE_READ_TYPES[version]
    # Every type the package writes by Hive's v1 hash is read bucketed.
    assert set(contracts.HIVE_HASH_TYPES) <= set(contracts.HIVE_READ_TYPES[1])


NAMES = [
    ("part-00000-1b2c-4d5e_00003.c000.snappy.parquet", 3),  # a datasource table's
    ("00003_0_part-00000-1b2c-4d5e_00003.c000.snappy.parquet", 3),  # a Hive table's, written by Spark
    ("part-00001-aa_00012.c000.zstd.orc", 12),
    ("part-00001-aa_00012.c000", 12),
    ("000003_0", 0),  # Hive's own name: Spark reads the id after the last "_"
    ("part-00000-1b2c-4d5e.c000.snappy.parquet", None),  # no bucket id
    ("data.parquet", None),
]


@pytest.mark.parametrize("name,bucket", NAMES)
def test_the_bucket_in_a_file_name_is_read_alike(name, bucket):
    assert bucket_of(name) == bucket
    sql = re.match(_macro_return_string("bucket_file_pattern"), "file:/w/t/p=1/" + name)
    assert (int(sql.group(1)) if sql else None) == bucket
    # The extension's stricter reading: only the names Spark's writer gives.
    scala = re.match(_scala_vals()["SparkBucketFileName"], name)
    assert (int(scala.group(2)) if scala else None) == (
        bucket if name.startswith(("part-", "0000")) and ".c0" in name else None
    )
    assert _scala_vals()["SparkBucketFileName"] == contracts.SPARK_BUCKET_FILE_NAME.pattern


# (name, bucket as Hive, Trino and the extension's foreign tables read it)
HIVE_NAMES = [
    ("000003_0", 3),  # Hive's own
    ("000003_0_copy_1", 3),  # Hive's second file of a bucket
    ("000012_0_20261127_101010_00001_abcde_0b6f7c1e-3c2a-4d6e-9f3a-1b2c3d4e5f60", 12),  # Trino's
    ("00003_0_part-00000-1b2c-4d5e_00003.c000.snappy.parquet", 3),  # Spark's Hive-style
    ("part-00000-1b2c-4d5e_00003.c000.snappy.parquet", None),  # Spark's datasource name: not a Hive name
    ("data.parquet", None),
]


@pytest.mark.parametrize("name,bucket", HIVE_NAMES)
def test_hives_bucket_in_a_file_name_is_read_alike(name, bucket):
    assert bucket_of(name, "hive") == bucket
    sql = re.match(_macro_return_string_of("bucket_file_pattern", "hive"), "file:/w/t/p=1/" + name)
    assert (int(sql.group(1)) if sql else None) == bucket
    scala = re.match(_scala_vals()["HiveBucketFileName"], name)
    assert (int(scala.group(1)) if scala else None) == bucket
    assert _scala_vals()["HiveBucketFileName"] == contracts.HIVE_BUCKET_IN_NAME.pattern


SHARED_LITERALS = [
    contracts.SORT_ORDERING_SETTING,
    contracts.PARTITION_KEY_PREFIX,
    contracts.FORMAT_VERSION_KEY,
    contracts.EXTENSION_SWITCH,
    contracts.SUPERSET_KEYS_SWITCH,
    contracts.CLONE_RATIO_SETTING,
    contracts.MERGED_FILES_SETTING,
    contracts.EXTENSION_CLASS,
    contracts.HIVE_HASH_V2_FUNCTION,
    contracts.HIVE_WRITER_HASH_FUNCTION,
]


@pytest.mark.parametrize("literal", SHARED_LITERALS)
def test_each_shared_name_is_written_once_per_language(literal):
    python = [p.name for p in PACKAGE.rglob("*.py") if f'"{literal}' in p.read_text() or f"'{literal}" in p.read_text()]
    assert python in ([], ["contracts.py"])
    scala = [p.name for p in SCALA.glob("*.scala") if f'"{literal}"' in p.read_text()]
    assert scala in ([], ["Contracts.scala"])


def test_type_aliases_are_one_table():
    from spark_bucketing import hashing
    from spark_bucketing.checker import keytypes

    for alias, name in contracts.TYPE_ALIASES.items():
        assert hashing.normalize_type(alias.upper()) == name
        assert keytypes.norm_type(alias) == name


def test_the_dbt_package_and_the_python_package_support_the_same_dbt():
    """dbt_project.yml's require-dbt-version and pyproject.toml's dbt-core range are one range: a dbt the
    Python package installs with must be one the dbt package accepts (the 1.10 cells of the version
    matrix found the dbt package still requiring 1.11)."""
    project = yaml.safe_load((ROOT / "dbt_project.yml").read_text())
    required = sorted(project["require-dbt-version"])
    pyproject = tomllib.loads((ROOT / "python_plugin" / "pyproject.toml").read_text())
    (declared,) = [d for d in pyproject["project"]["dependencies"] if d.startswith("dbt-core")]
    bounds = sorted(declared.removeprefix("dbt-core").split(","))

    def version(bound: str) -> tuple[str, tuple[int, ...]]:
        op, number = re.fullmatch(r"([<>=]+)\s*([\d.]+)", bound.strip()).groups()
        parts = tuple(int(p) for p in number.split("."))
        return op, parts + (0,) * (3 - len(parts))

    assert sorted(map(version, required)) == sorted(map(version, bounds)), (required, declared)
