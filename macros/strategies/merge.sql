{#- incremental_strategy='merge': upserts and change-feed deletes by
    unique_key, on plain Parquet/ORC tables. A merge rewrites only the
    partitions its rows touch (or where their keys live), through the same
    verified publish as insert_overwrite. -#}

{% macro merge_plan(rels, run, whole) %}
  {{ return(adapter.dispatch('merge_plan', 'spark_bucketing')(rels, run, whole)) }}
{% endmacro %}

{% macro default__merge_plan(rels, run, whole) %}
  {%- set merge = run.merge -%}
  {%- set spec = run.spec -%}
  {%- set location = spark_bucketing.stage_location(run) -%}
  {%- set stage_columns = run.columns.copy() -%}
  {%- if merge.delete_column -%}{%- do stage_columns.update({merge.delete_column: 'boolean'}) -%}{%- endif -%}
  {%- set staged = spark_bucketing.stage(rels, run, stage_columns, not whole) -%}
  {%- do spark_bucketing.check_new_keys(rels, staged, location, merge) -%}
  {%- set scope = none if whole else spark_bucketing.merge_scope(run.existing, staged.source, staged.partitions, merge, spec.partition_by) -%}
  {%- if merge.validate_deletes -%}
    {%- do spark_bucketing.check_deletes_exist(run.existing, rels, staged, location, merge, spec.partition_by, scope) -%}
  {%- endif -%}
  {%- set accounting = spark_bucketing.merge_row_accounting(run.existing, staged.source, merge, spec.partition_by, scope) if merge.row_accounting else none -%}
  {%- set content = spark_bucketing.merge_sql(run.existing, staged.source, run.columns, merge, spec, scope) -%}
  {%- set bucketed_rows = not whole and spark_bucketing.merge_output_is_bucketed(merge, spec, run.info) -%}
  {{ return(spark_bucketing.strategy_plan(run, whole, content, staged=staged, replaced_partitions=scope, accounting=accounting, bucketed_rows=bucketed_rows)) }}
{% endmacro %}
