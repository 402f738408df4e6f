{#- bucketed_incremental: the first run and --full-refresh build like
    bucketed_table; later runs write only the partitions the new rows touch
    (insert_overwrite), rewrite them with old and new rows (append), or with
    the rows merged by unique_key (merge), or replace the rows of a dbt
    microbatch batch's event_time range (microbatch), always one file per
    bucket per partition. A change of bucket spec is handled by
    on_bucket_change: fail, rebuild, or evolve; a change of columns by
    on_schema_change. The model's query runs once per run. -#}

{% materialization bucketed_incremental, adapter='spark' %}
  {{ return(spark_bucketing.bucketed_incremental_materialization()) }}
{% endmaterialization %}

{% macro bucketed_incremental_materialization() %}
  {#- The run of a bucketed incremental model: bucketed_incremental's, and
      materialized='incremental' with `buckets` where the project routes
      dbt's incremental to the package (incremental_materialization). -#}
  {%- set spec = spark_bucketing.bucket_spec() -%}
  {%- set incr = spark_bucketing.incremental_config(spec) -%}
  {%- set rels = spark_bucketing.model_relations() -%}
  {%- set grant_config = config.get('grants') -%}
  {#- Unqualified, is_incremental() is what the model called: the project's override, or dbt's. -#}
  {%- do spark_bucketing.check_plain_is_incremental(is_incremental(), spark_bucketing.is_incremental()) -%}

  {{ run_hooks(pre_hooks) }}

  {%- if spark_bucketing.compaction_requested() -%}
    {%- set run = spark_bucketing.compaction_run(rels, spec, incr) -%}
    {%- set plan = spark_bucketing.compaction_plan(run) -%}
    {%- if plan is not none -%}{%- do spark_bucketing.publish_incremental(rels, run, plan) -%}
    {%- else -%}{%- call statement('main') -%}select 0 as compacted_partitions{%- endcall -%}{%- endif -%}
    {{ return({'relations': [rels.target]}) }}
  {%- endif -%}
  {%- set run = spark_bucketing.incremental_run(rels, spark_bucketing.contract_sql(sql), spec, incr) -%}
  {%- if run.full_refresh -%}
    {%- set rows = spark_bucketing.kept_rows_sql(run.model_sql, run.columns, run.merge) -%}
    {%- do spark_bucketing.replace_table(rels, run.spec, run.columns, rows, run.existing,
        event_time_before=run.incr.batch.end if run.incr.batch is not none else none) -%}
  {%- else -%}
    {%- do spark_bucketing.publish_incremental(rels, run, spark_bucketing.incremental_plan(rels, run)) -%}
  {%- endif -%}

  {%- set should_revoke = should_revoke(run.existing, full_refresh_mode=run.full_refresh) -%}
  {%- do apply_grants(rels.target, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [rels.target]}) }}
{% endmacro %}
