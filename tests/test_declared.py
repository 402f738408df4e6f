"""`check --catalog local`'s declarations (spark_bucketing.checker.declared):
the DDL each relation gets from what the manifest says of it, and why a
relation is left undeclared. That Spark plans over them as over the tables
themselves is tests/test_checker_randomized.py's; the command from a user's
install, tests/test_clean_install.py's."""

from __future__ import annotations

from spark_bucketing.checker.declared import table_ddl, why_not_declared
from spark_bucketing.checker.relations import RelationInfo
from spark_bucketing.metadata import BucketSpec


def test_a_spark_hash_table_is_a_data_source_table_with_its_spec():
    info = RelationInfo(
        "s.t", {"k": "int", "v": "string", "day": "date"}, BucketSpec("spark", ("k",), 8, ("v",)), ["day"]
    )
    assert table_ddl(info) == (
        "create table `s`.`t` (`k` int, `v` string, `day` date) using parquet partitioned by (`day`)"
        " clustered by (`k`) sorted by (`v`) into 8 buckets"
    )


def test_a_package_hive_hash_table_is_a_hive_table_with_its_version_and_the_packages_mark():
    spec = BucketSpec("hive", ("k", "g"), 16, version=2)
    info = RelationInfo("s.h", {"k": "bigint", "g": "int", "day": "date"}, spec, ["day"], built_by_package=True)
    assert table_ddl(info) == (
        "create table `s`.`h` (`k` bigint, `g` int) partitioned by (`day` date) clustered by (`k`, `g`)"
        " into 16 buckets stored as parquet"
        " tblproperties ('spark_bucketing.format_version' = '1', 'bucketing_version' = '2')"
    )


def test_a_plain_table_has_no_clauses():
    assert table_ddl(RelationInfo("p", {"k": "int"})) == "create table `p` (`k` int) using parquet"


def test_a_relation_whose_columns_are_not_all_typed_is_not_declared():
    assert why_not_declared(None, "s.x") == "s.x is not in the manifest"
    untyped = RelationInfo("s.t", {"k": "int", "v": None})
    assert "the types of v are not known" in why_not_declared(untyped, "s.t")
    assert "dbt docs generate" in why_not_declared(RelationInfo("s.t", {}), "s.t")
    bad = RelationInfo("s.t", {"k": "int"}, partition_by=["day"])
    assert why_not_declared(bad, "s.t") == "s.t: partition column day is not among its columns"
    assert why_not_declared(RelationInfo("s.t", {"k": "int"}), "s.t") is None
