{#- The configs of bucketed_incremental, and the existing table checked
    against this run, before any statement that writes. -#}

{% macro static_partitions_config(spec, partitions) %}
  {#- Config `partitions` as a list of {partition column: value}. -#}
  {%- if partitions is string or partitions is mapping or partitions is not iterable -%}
    {%- set partitions = [partitions] -%}
  {%- endif -%}
  {%- set normalized = [] -%}
  {%- for p in partitions -%}
    {%- if p is mapping -%}
      {%- if p.keys() | map('lower') | sort | list != spec.partition_by | map('lower') | sort | list -%}
        {%- do spark_bucketing.config_error('partitions', "entry " ~ p ~ " must give a value for each of " ~ (spec.partition_by | join(', ')),
            "write each entry as {" ~ (spec.partition_by | join(": ..., ")) ~ ": ...}") -%}
      {%- endif -%}
      {%- do normalized.append(p) -%}
    {%- elif spec.partition_by | length == 1 and p is not none -%}
      {%- do normalized.append({spec.partition_by[0]: p}) -%}
    {%- else -%}
      {%- do spark_bucketing.config_error('partitions', "entry " ~ p ~ " is not a mapping of partition column to value",
          "write e.g. partitions=[{'order_date': '2024-06-01'}]") -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(normalized) }}
{% endmacro %}

{% macro default_incremental_strategy() %}
  {#- A routed materialized='incremental' model keeps dbt-spark's default,
      `append`: adding `buckets` to a model must not change what its runs do
      to its rows. bucketed_incremental's own default replaces the
      partitions the new rows fall in. -#}
  {{ return('append' if model.config.materialized == 'incremental' else 'insert_overwrite') }}
{% endmacro %}

{% macro incremental_config(spec) %}
  {%- set strategy = config.get('incremental_strategy') or spark_bucketing.default_incremental_strategy() -%}
  {%- if strategy not in ('insert_overwrite', 'append', 'merge', 'microbatch') -%}
    {%- do spark_bucketing.config_error('incremental_strategy', "must be 'insert_overwrite', 'append', 'merge' or 'microbatch', got '" ~ strategy ~ "'",
        "use insert_overwrite (replace the partitions the new rows fall in), append (add rows; touched partitions are rewritten), merge (upsert and delete by unique_key) or microbatch (dbt's batches by event_time)") -%}
  {%- endif -%}
  {%- if strategy == 'merge' and not spark_bucketing.column_list_config('unique_key', repeats=true) -%}
    {#- dbt's merge without a unique_key matches no row: it inserts every new row, an append. -#}
    {%- if spark_bucketing.column_list_config('merge_delete_column') -%}
      {%- do spark_bucketing.config_error('merge_delete_column', "is set without unique_key: a delete removes the row of its unique_key",
          "set unique_key to the column (or list of columns) that identifies a row, e.g. unique_key=['order_id']") -%}
    {%- endif -%}
    {%- set strategy = 'append' -%}
  {%- endif -%}
  {%- set on_change = config.get('on_bucket_change') or 'fail' -%}
  {%- if on_change not in ('fail', 'rebuild', 'evolve') -%}
    {%- do spark_bucketing.config_error('on_bucket_change', "must be 'fail', 'rebuild' or 'evolve', got '" ~ on_change ~ "'",
        "see docs/incremental.md, section on bucket spec changes") -%}
  {%- endif -%}
  {%- set partitions = config.get('partitions') -%}
  {%- if partitions is not none -%}
    {%- if strategy != 'insert_overwrite' or not spec.partition_by -%}
      {%- do spark_bucketing.config_error('partitions', "static partitions need incremental_strategy='insert_overwrite' and partition_by",
          "remove partitions, or set both") -%}
    {%- endif -%}
    {%- set partitions = spark_bucketing.static_partitions_config(spec, partitions) -%}
  {%- endif -%}
  {{ return({'strategy': strategy, 'on_bucket_change': on_change, 'partitions': partitions,
             'on_schema_change': spark_bucketing.on_schema_change_config(),
             'batch': spark_bucketing.batch_config(spec) if strategy == 'microbatch' else none}) }}
{% endmacro %}

{% macro check_table_shape(spec, info) %}
  {#- The partition columns and file format match the table's (its columns: on_schema_change, schema_change.sql). -#}
  {%- set fix = "run once with --full-refresh to rebuild the table" -%}
  {%- if info.partition_by | map('lower') | list != spec.partition_by | map('lower') | list -%}
    {%- do spark_bucketing.config_error('partition_by', "is " ~ spec.partition_by ~ " but the table is partitioned by " ~ info.partition_by, fix) -%}
  {%- endif -%}
  {%- if info.file_format != spec.file_format -%}
    {%- do spark_bucketing.config_error('file_format', "is '" ~ spec.file_format ~ "' but the table's files are " ~ info.file_format, fix) -%}
  {%- endif -%}
{% endmacro %}

{% macro check_incremental_target(spec, info, meta, incr) %}
  {#- Checks an existing table against this run; returns true when the run
      must rebuild the table whole (on_bucket_change='rebuild', or a table
      this package did not build). Fails before any write otherwise. -#}
  {%- do spark_bucketing.check_table_shape(spec, info) -%}
  {%- set old = meta.spec or spark_bucketing.declared_spec(info) -%}
  {%- if old is none or info.type != 'external' -%}
    {%- do log("spark_bucketing: " ~ this ~ " was not built by this package; rebuilding it whole", info=true) -%}
    {{ return(true) }}
  {%- endif -%}
  {%- set new = spark_bucketing.spec_record(spec) -%}
  {%- if spark_bucketing.same_spec(old, new) -%}
    {#- An evolved table (declared unbucketed while its partitions hold different specs, or one's files differ
        from its record) is repaired by rebuilding it whole: `rebuild` on the same spec was a silent no-op. -#}
    {%- if incr.on_bucket_change == 'rebuild' and spark_bucketing.declared_spec(info) is none -%}
      {%- do log("spark_bucketing: " ~ this ~ " is declared unbucketed (its partitions do not all hold one bucket spec);"
          ~ " on_bucket_change='rebuild' rewrites every partition with " ~ spark_bucketing.describe_spec(new), info=true) -%}
      {{ return(true) }}
    {%- endif -%}
    {{ return(false) }}
  {%- endif -%}
  {%- if spark_bucketing.bucketing_version(old) != spark_bucketing.bucketing_version(new) and incr.on_bucket_change == 'evolve' -%}
    {%- do spark_bucketing.config_error('on_bucket_change', "'evolve' cannot change bucketing_version from " ~ spark_bucketing.bucketing_version(old)
        ~ " to " ~ spark_bucketing.bucketing_version(new) ~ ": it is one label for the whole table, by which Hive, Trino and the session extension read every partition",
        "set on_bucket_change='rebuild' (or run once with --full-refresh) to rewrite every partition with the new version") -%}
  {%- endif -%}

  {%- if incr.on_bucket_change == 'fail' -%}
    {%- do spark_bucketing.config_error('on_bucket_change', "the bucket spec changed from " ~ spark_bucketing.describe_spec(old)
        ~ " to " ~ spark_bucketing.describe_spec(new) ~ ", and on_bucket_change is 'fail'",
        "set on_bucket_change='rebuild' to rewrite every partition with the new spec, or on_bucket_change='evolve' to write new partitions with it and keep the old ones as they are (or restore the old spec)") -%}
  {%- endif -%}
  {%- if old.buckets != new.buckets and incr.on_bucket_change == 'evolve' -%}
    {%- if not spark_bucketing.power_of_two_multiple(old.buckets, new.buckets) -%}
      {%- do exceptions.warn("spark_bucketing: model '" ~ model.unique_id ~ "': bucket count " ~ old.buckets ~ " -> " ~ new.buckets
          ~ " is not a power-of-two multiple; Trino cannot read partitions with these two counts together as bucketed") -%}
    {%- endif -%}
  {%- endif -%}
  {{ return(incr.on_bucket_change == 'rebuild') }}
{% endmacro %}

{% macro check_plain_is_incremental(answer_seen, answer) %}
  {#- A model that calls dbt's plain is_incremental() got `answer_seen`
      (dbt's own: false for every bucketed_incremental model, unless the
      project overrides it); the run is incremental when `answer`. Where
      they differ the model's rows were made for the other kind of run (a
      full recompute, or every row appended again): the run stops before
      anything is written. -#}
  {#- (The macro's name is spelled in two pieces: the message names it, it does not call it.) -#}
  {%- set ours = 'spark_bucketing' ~ '.is_incremental()' -%}
  {%- if answer_seen != answer and modules.re.search('(?<![\\w.])is_incremental\\s*\\(', model.raw_code or '') -%}
    {%- do spark_bucketing.model_error("the model calls dbt's is_incremental(), which answered " ~ (answer_seen | lower)
        ~ " where this run is " ~ ('incremental' if answer else 'a full build')
        ~ ": dbt's macro answers only for materialized='incremental', so the model's rows would be wrong (a full recompute,"
        ~ " or every row appended again). Nothing was written. Fix: add to your project a macro file, e.g."
        ~ " macros/is_incremental.sql, holding {% macro is_incremental() %}{{ return(" ~ ours ~ ") }}{% endmacro %}"
        ~ " (it answers for bucketed_incremental models and gives dbt's answer for every other model), or call"
        ~ " " ~ ours ~ " in the model") -%}
  {%- endif -%}
{% endmacro %}

{% macro check_added_files_config(spec, incr, extension) %}
  {#- An append or a microbatch batch adds files (max_files_per_bucket
      above 1) through the session extension's switch, which moves them into
      the partitions' folders and records them in one statement. -#}
  {%- if spec.max_files_per_bucket > 1 and incr.strategy in ('append', 'microbatch') and spec.partition_by and not extension -%}
    {%- do spark_bucketing.config_error('max_files_per_bucket', "is " ~ spec.max_files_per_bucket ~ ", and " ~ incr.strategy ~ " runs that add files need the session extension,"
        ~ " whose switch moves the new files into the partitions' folders and records them in one statement",
        "load the extension (docs/extension.md), or set max_files_per_bucket=1 (every append rewrites the partitions it touches)") -%}
  {%- endif -%}
{% endmacro %}
