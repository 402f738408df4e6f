{#- incremental_strategy='append': the new rows are added. Each partition
    they fall in is rewritten with its old rows and the new ones, or, where
    max_files_per_bucket allows one more file per bucket, takes the new
    rows' files beside its own (appends_in_place). -#}

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
  {%- set in_place = spark_bucketing.appends_in_place(run, staged.partitions) -%}
  {%- set rewritten = staged.partitions | reject('in', in_place.values() | list) | list -%}
  {%- set content -%}
    select {{ cols }} from {{ staged.source }}
    {%- if rewritten %}
    union all
    select {{ cols }} from {{ run.existing }}
    where {{ spark_bucketing.partition_match(run.spec.partition_by, rewritten) }}
    {%- endif %}
  {%- endset -%}
  {{ return(spark_bucketing.strategy_plan(run, whole, content, staged=staged, replaced_partitions=run.incr.partitions,
      added=in_place.keys() | list)) }}
{% endmacro %}

{% macro appends_in_place(run, partitions) %}
  {#- {values_key: values} of the touched `partitions` that take the new
      rows' files beside their own instead of being rewritten: with
      max_files_per_bucket above 1, the session extension (its switch moves
      the files into the partition's folder and records them in one
      statement) and records in table properties, each partition whose
      record has this run's spec and room for one more file per bucket
      (`appended`: the files per bucket added since it was last written
      whole) and whose folder is the one its record describes (a run that
      died in its switch can leave a record behind; one DESCRIBE per
      partition). The others are rewritten, one file per bucket again: the
      compaction past the limit. -#}
  {%- set limit = run.spec.get('max_files_per_bucket', 1) -%}
  {%- if limit < 2 or not run.extension or spark_bucketing.records_format(run.spec) != '1' or run.meta.version == '2' or not partitions -%}
    {{ return({}) }}
  {%- endif -%}
  {%- set by_key = {} -%}
  {%- for rec in run.meta.partitions.values() if rec['values'] is defined -%}
    {%- do by_key.update({spark_bucketing.values_key(rec['values'], run.spec.partition_by): rec}) -%}
  {%- endfor -%}
  {%- set spec = spark_bucketing.spec_record(run.spec) -%}
  {%- set out = {} -%}
  {%- for values in partitions -%}
    {%- set key = spark_bucketing.values_key(values, run.spec.partition_by) -%}
    {%- set rec = by_key.get(key) -%}
    {%- if rec is not none and spark_bucketing.same_spec(rec, spec) and rec.get('appended', 0) + 2 <= limit
        and spark_bucketing.same_location(rec.location, spark_bucketing.partition_location(run.existing, values) or '') -%}
      {%- do out.update({key: values}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}
