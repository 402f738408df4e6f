{#- incremental_strategy='insert_overwrite': the new rows replace the
    partitions they fall in, and the static `partitions` (emptied where no
    new row falls in them). -#}

{% macro insert_overwrite_plan(rels, run, whole) %}
  {{ return(adapter.dispatch('insert_overwrite_plan', 'spark_bucketing')(rels, run, whole)) }}
{% endmacro %}

{% macro default__insert_overwrite_plan(rels, run, whole) %}
  {%- set keys = spark_bucketing.quoted(run.spec.partition_by) -%}
  {%- if not (whole and keys) -%}
    {{ return(spark_bucketing.strategy_plan(run, whole, run.new_sql, replaced_partitions=run.incr.partitions)) }}
  {%- endif -%}
  {#- A rebuild of a partitioned table keeps the partitions the new rows do
      not touch. The new rows are read twice (to know which partitions they
      touch), so they are staged: the model's query runs once. -#}
  {%- set staged = spark_bucketing.stage(rels, run, run.columns, false) -%}
  {%- set cols = spark_bucketing.quoted(run.columns.keys() | list) | join(', ') -%}
  {%- set content -%}
    select {{ cols }} from {{ run.existing }} as __sb_old
    left anti join (select distinct {{ keys | join(', ') }} from {{ staged.source }}) as __sb_touched
      on {% for k in keys %}__sb_old.{{ k }} <=> __sb_touched.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
    union all
    select {{ cols }} from {{ staged.source }}
  {%- endset -%}
  {{ return(spark_bucketing.strategy_plan(run, whole, content, staged=staged, replaced_partitions=run.incr.partitions)) }}
{% endmacro %}
