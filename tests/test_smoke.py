from tests.support.spark import files_per_bucket, table_location


def test_smoke(spark, dbt_project):
    dbt_project.write_model(
        "smoke",
        "select cast(id as int) as k, cast(id % 3 as string) as p, concat('v', id) as v from range(0, 1000, 1, 6)",
        {"materialized": "bucketed_table", "clustered_by": "k", "buckets": 7, "partition_by": ["p"], "sorted_by": ["v"]},
    )
    dbt_project.run("smoke")
    loc = table_location(spark, f"{dbt_project.schema}.smoke")
    counts = files_per_bucket(loc)
    print(counts)
    assert all(n == 1 for n in counts.values())
