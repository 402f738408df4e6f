"""What the checker tells an author to do (issue 83), on catalogs made here: no JVM. That each setting it
offers works when followed is tests/test_checker_corpus.py's (planned in Spark)."""

from __future__ import annotations

from spark_bucketing.checker import EngineSettings, analyze_sql
from spark_bucketing.checker.relations import Catalog, RelationInfo
from spark_bucketing.metadata import BucketSpec


def spark(buckets: int, *columns: str) -> BucketSpec:
    return BucketSpec("spark", columns or ("k",), buckets, (), 1)


def catalog(*infos: RelationInfo) -> Catalog:
    out = Catalog()
    for info in infos:
        out.add(info)
    return out


def join_finding(sql: str, cat: Catalog, conf: dict | None = None):
    (f,) = [f for f in analyze_sql(sql, cat, EngineSettings("spark", conf or {})) if f.kind == "join"]
    return f


def test_coalescing_is_offered_only_where_the_counts_qualify():
    cat = catalog(
        *(RelationInfo(f"s.t{n}", {"k": "int"}, spark(n), complete=True) for n in (6, 8, 16)),
    )
    f = join_finding("select * from s.t8 a join s.t16 b on a.k = b.k", cat)
    assert any("coalesceBucketsInJoin.enabled=true (16 is 2 times 8)" in s for s in f.suggestions), f.suggestions
    # 6 and 8: neither a multiple of the other, so the setting alone would change nothing.
    f = join_finding("select * from s.t6 a join s.t8 b on a.k = b.k", cat)
    (text,) = f.suggestions
    assert text.startswith("give both tables the same bucket count, or counts of which one is a multiple"), text
    assert "set spark.sql.bucketing" not in text


def test_a_partition_column_is_never_offered_as_a_bucket_column():
    cat = catalog(
        RelationInfo("s.b", {"k": "int", "day": "date"}, spark(8), ["day"], complete=True),
        RelationInfo("s.p", {"k": "int", "day": "date"}, None, ["day"], complete=True),
    )
    f = join_finding("select * from s.b b join s.p p on b.k = p.k and b.day = p.day", cat)
    texts = [s for s in f.suggestions if s.startswith("materialize s.p")]
    assert texts and all("clustered_by=[k]" in s and "day" not in s.split("(")[0] for s in texts), f.suggestions
    assert any("not its partition columns day" in s for s in texts)


def test_an_unknown_verdict_names_the_column_and_what_supplies_it():
    cat = catalog(
        RelationInfo("s.users", {"user_id": "int"}, spark(8, "user_id")),
        RelationInfo("s.events", {"user_id": "int"}, spark(8, "user_id")),
    )
    sql = (
        "select u.user_id, u.country, count(*) from s.users u join s.events e on u.user_id = e.user_id"
        " group by u.user_id, u.country"
    )
    (agg,) = [f for f in analyze_sql(sql, cat, EngineSettings()) if f.kind == "aggregate"]
    assert agg.unknown
    assert agg.suggestions == [
        "the type of country in s.users is not known: give each a data_type in its schema.yml, run"
        " `dbt docs generate` (the checker reads target/catalog.json), or use --catalog live"
    ]
