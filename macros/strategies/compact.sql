{#- A compaction: the partitions to which appends added files
    (max_files_per_bucket) rewritten from their own rows, one file per
    bucket, under the same write, check, commit lock and atomic switch as a
    run. It runs as the model's own run with the variable
    spark_bucketing_compact (a run-operation has no model, whose configs
    and commit lock it needs):

      dbt run --select my_model --vars '{spark_bucketing_compact: true}'

    The model's query is not run; the table's rows are not changed. -#}

{% macro compaction_requested() %}
  {{ return(var('spark_bucketing_compact', false) | string | lower == 'true') }}
{% endmacro %}

{% macro compaction_run(rels, spec, incr) %}
  {#- The run's context (incremental_run's shape) for a compaction of the existing table. -#}
  {%- set existing = spark_bucketing.recover(rels) -%}
  {%- set info = spark_bucketing.table_info(existing) if existing is not none and existing.is_table else none -%}
  {%- if info is none or not spec.partition_by -%}
    {%- do spark_bucketing.model_error("spark_bucketing_compact: " ~ rels.target ~ " is not a partitioned table this package built; there is nothing to compact") -%}
  {%- endif -%}
  {%- set extension = spark_bucketing.extension_active() -%}
  {%- set meta = spark_bucketing.finished_appends(rels, existing, spark_bucketing.read_metadata(existing, records=false)) -%}
  {%- if meta.version == '2' -%}
    {#- Format 2: every partition's record, for the ones that took added files (one listing, as the layout test's). -#}
    {%- set meta = spark_bucketing.read_metadata(existing) -%}
  {%- endif -%}
  {%- do spark_bucketing.check_table_shape(spec, info) -%}
  {%- do rels.update({'extension': extension}) -%}
  {{ return({'incr': incr, 'merge': none, 'existing': existing, 'info': info, 'meta': meta, 'full_refresh': false, 'rebuild': false,
             'columns': info.columns, 'spec': spark_bucketing.validate_columns(spec, info.columns), 'extension': extension,
             'run_id': rels.run_id}) }}
{% endmacro %}

{% macro compaction_plan(run) %}
  {#- The plan that rewrites the partitions whose record counts added
      files, or none when there are none. -#}
  {%- set partitions = run.meta.partitions.values() | selectattr('appended', 'defined') | rejectattr('appended', 'equalto', 0)
      | map(attribute='values') | list -%}
  {%- if not partitions -%}{{ return(none) }}{%- endif -%}
  {%- do log("spark_bucketing: compacting " ~ (partitions | length) ~ " partition(s) of " ~ run.existing ~ " to one file per bucket", info=true) -%}
  {%- set content -%}
    select {{ spark_bucketing.quoted(run.columns.keys() | list) | join(', ') }} from {{ run.existing }}
    where {{ spark_bucketing.partition_match(run.spec.partition_by, partitions) }}
  {%- endset -%}
  {%- set plan = spark_bucketing.strategy_plan(run, false, content) -%}
  {%- do plan.update({'strategy': 'compaction', 'reads_old_rows': true}) -%}
  {{ return(plan) }}
{% endmacro %}
