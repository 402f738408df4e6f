{#- Generic test: the files of a bucketed table follow its declared spec. One
    result row per offending file; the offending files are also logged.
    `max_files_per_bucket`: the files a bucket may have in a partition (1, or
    what the package recorded; more for a table Hive or Trino appends to). -#}

{% test bucket_layout(model, max_files_per_bucket=none) %}
  {%- if not execute -%}
    select 1 as file_path where false
  {%- else -%}
    {%- set relation = spark_bucketing.tested_relation(model) -%}
    {%- if not spark_bucketing.tested_table_exists(relation) -%}
      {{ return(spark_bucketing.not_built_yet(relation, 'bucket_layout', ['file_path', 'problem'])) }}
    {%- endif -%}
    {%- set violations = spark_bucketing.layout_violations(relation, max_files=max_files_per_bucket) -%}
    {%- if violations | length > 0 -%}
      {%- do log("bucket_layout: " ~ relation ~ " breaks its bucket spec in " ~ (violations | length) ~ " files:\n"
          ~ spark_bucketing.describe_violations(violations, 50) ~ "\n" ~ spark_bucketing.repair_hint(relation), info=true) -%}
    {%- endif -%}
    {{ spark_bucketing.rows_as_values(violations, ['file_path', 'problem']) }}
  {%- endif -%}
{% endtest %}
