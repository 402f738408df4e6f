{% macro tested_relation(model) %}
  {#- The table a test reads, as the catalog names it: under `dbt build
      --empty` (or a microbatch sample) dbt hands a test its model as a
      subquery with no rows, which DESCRIBE and SHOW cannot take. The
      tests check the real table either way. -#}
  {{ return(api.Relation.create(database=model.database, schema=model.schema, identifier=model.identifier, type=model.type)) }}
{% endmacro %}

{% macro tested_table_exists(relation) %}
  {#- Whether the catalog has the table a test reads: dbt's relation cache, which lists the schema once. -#}
  {{ return(adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) is not none) }}
{% endmacro %}

{% macro not_built_yet(relation, test_name, columns) %}
  {#- A test of a table that does not exist yet. `dbt compile`, `dbt docs generate`, `dbt ls` and
      `spark-bucketing check` compile every test before any table is built, as a CI does before it builds;
      dbt's own tests compile without their tables, and so do these: their SQL then returns no row.
      `dbt test` (and `dbt build`, `dbt retry`, which run a test after its model) stops with what to do. -#}
  {%- if flags.WHICH in ('test', 'build', 'retry') -%}
    {{ exceptions.raise_compiler_error("spark_bucketing." ~ test_name ~ ": " ~ relation ~ " is not built yet (the catalog has no such table)."
        ~ " Fix: build its model first (`dbt run --select <model>`), or run `dbt build`, which tests each model after building it;"
        ~ " for a source, check its schema and name.") }}
  {%- endif -%}
  select {% for c in columns %}cast(null as string) as {{ c }}{{ ', ' if not loop.last }}{% endfor %} where false
{% endmacro %}

{% macro repair_hint(relation) %}
  {#- What a failing layout or metadata test tells the user to do. -#}
  {{ return("To repair: rewrite the table with its model, which writes every file anew and records it:"
      ~ " `dbt run --select <model> --full-refresh` (a bucketed_incremental model; any `dbt run` rebuilds a bucketed_table)."
      ~ " Until then queries that trust the spec may return wrong rows: Spark's bucketed joins and lookups read each bucket's file alone."
      ~ " A table Hive, Trino or another tool appends to: compact it there, or allow its files per bucket with the test's"
      ~ " max_files_per_bucket argument (docs/tests.md).") }}
{% endmacro %}
