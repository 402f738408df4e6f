{#- dbt runs a microbatch model's batches (event_time, begin, lookback,
    --event-time-start/--event-time-end, dbt retry of failed batches) only
    for materialized='incremental'. A project routes dbt-spark's incremental
    materialization here with one file of its own (docs/incremental.md,
    "Microbatch"):

      {% materialization incremental, adapter='spark' %}
        {{ return(spark_bucketing.incremental_materialization()) }}
      {% endmaterialization %}

    dbt lets a root project override a builtin materialization; a package
    cannot do it for the project unasked. -#}

{% macro incremental_materialization() %}
  {#- A model with `buckets` runs as bucketed_incremental; every other
      incremental model runs dbt-spark's own materialization, unchanged. -#}
  {%- if spark_bucketing.is_bucketed_incremental(model.config) -%}
    {{ return(spark_bucketing.bucketed_incremental_materialization()) }}
  {%- endif -%}
  {{ return(dbt.materialization_incremental_spark()) }}
{% endmacro %}
