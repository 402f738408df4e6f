{#- incremental_strategy='append': the new rows are added; each partition
    they fall in is rewritten with its old rows and the new ones. -#}

{% macro append_plan(rels, run, whole) %}
  {{ return(adapter.dispatch('append_plan', 'spark_bucketing')(rels, run, whole)) }}
{% endmacro %}

{% macro default__append_plan(rels, run, whole) %}
  {%- set cols = spark_bucketing.quoted(run.columns.keys() | list) | join(', ') -%}
  {%- if whole -%}
    {%- set content -%}
      select {{ cols }} from {{ run.existing }}
      union all
      select {{ cols }} from ({{ run.new_sql }}) as __sb_new
    {%- endset -%}
    {{ return(spark_bucketing.strategy_plan(run, whole, content)) }}
  {%- endif -%}
  {#- The new rows are staged, so that their catalog entry (or folder) names
      the partitions they touch: a literal filter, and Spark reads only those
      partitions of the table. -#}
  {%- set staged = spark_bucketing.stage(rels, run, run.columns, true) -%}
  {%- set content -%}
    select {{ cols }} from {{ staged.source }}
    union all
    select {{ cols }} from {{ run.existing }}
    where {{ spark_bucketing.partition_match(run.spec.partition_by, staged.partitions) }}
  {%- endset -%}
  {{ return(spark_bucketing.strategy_plan(run, whole, content, staged=staged, replaced_partitions=run.incr.partitions)) }}
{% endmacro %}
