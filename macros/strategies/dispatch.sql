{#- The plan of an incremental run's strategy. -#}

{% macro incremental_plan(rels, run) %}
  {#- Unpartitioned tables and spec rebuilds are rewritten whole, atomically. -#}
  {%- set whole = run.rebuild or not run.spec.partition_by -%}
  {%- if run.incr.strategy == 'merge' -%}
    {{ return(spark_bucketing.merge_plan(rels, run, whole)) }}
  {%- elif run.incr.strategy == 'microbatch' -%}
    {{ return(spark_bucketing.microbatch_plan(rels, run, whole)) }}
  {%- elif run.incr.strategy == 'append' -%}
    {{ return(spark_bucketing.append_plan(rels, run, whole)) }}
  {%- endif -%}
  {{ return(spark_bucketing.insert_overwrite_plan(rels, run, whole)) }}
{% endmacro %}
