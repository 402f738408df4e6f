{#- incremental_strategy='microbatch': dbt's batch, checked before anything
    is written. -#}

{% macro routing_fix() %}
  {#- (The macro's name is spelled in two pieces: the message names it, it does not call it.) -#}
  {{ return("set materialized='incremental' and add to your project one file, e.g. macros/incremental.sql, holding"
      ~ " {% materialization incremental, adapter='spark' %}{{ return(spark_bucketing" ~ ".incremental_materialization()) }}{% endmaterialization %}"
      ~ " (it runs models with `buckets` as bucketed_incremental and every other incremental model as dbt-spark's; docs/incremental.md, Microbatch)") }}
{% endmacro %}

{% macro batch_config(spec) %}
  {#- dbt's batch of this run: {'event_time': the column, 'start', 'end':
      the range [start, end) as text Spark casts to a timestamp}. dbt makes
      batches only for materialized='incremental' (routing_fix). -#}
  {%- set event_time = config.get('event_time') -%}
  {%- if event_time is not string or not event_time -%}
    {%- do spark_bucketing.config_error('event_time', "is required by incremental_strategy='microbatch', got " ~ event_time,
        "set event_time to the name of the model's event-time column, e.g. event_time='event_ts'") -%}
  {%- endif -%}
  {%- set batch = model.get('batch') -%}
  {%- if not batch or not batch.get('event_time_start') or not batch.get('event_time_end') -%}
    {%- do spark_bucketing.config_error('incremental_strategy', "'microbatch' runs in dbt's batches, and dbt makes batches only for materialized='incremental'",
        spark_bucketing.routing_fix()) -%}
  {%- endif -%}
  {%- if spec.partition_by | length > 1 -%}
    {%- do spark_bucketing.config_error('partition_by', "is " ~ spec.partition_by ~ "; a microbatch table is partitioned by one date column (the event time's date) or not at all",
        "partition by one date column holding cast(" ~ event_time ~ " as date), e.g. partition_by=['event_date']") -%}
  {%- endif -%}
  {{ return({'event_time': event_time, 'start': batch.event_time_start | string, 'end': batch.event_time_end | string}) }}
{% endmacro %}

{% macro check_batch_columns(spec, columns, batch) %}
  {#- The event-time column is one of the model's, a date or timestamp; the
      partition column, if any, a date (its value checked per row: batch_rows_sql). -#}
  {%- set event_type = spark_bucketing.lookup_ci(columns, batch.event_time) -%}
  {%- if event_type is none or event_type | lower not in ('date', 'timestamp', 'timestamp_ntz') -%}
    {%- do spark_bucketing.config_error('event_time', "'" ~ batch.event_time ~ "' must be a date or timestamp column of the model, got "
        ~ (event_type or 'no such column'), "name a date or timestamp column of the model's query") -%}
  {%- endif -%}
  {%- set partition_type = spark_bucketing.lookup_ci(columns, spec.partition_by[0]) if spec.partition_by else 'date' -%}
  {%- if partition_type | lower != 'date' -%}
    {%- do spark_bucketing.config_error('partition_by', "'" ~ spec.partition_by[0] ~ "' is " ~ partition_type ~ "; a microbatch table's partition column is a date, cast(" ~ batch.event_time ~ " as date)",
        "partition by a date column holding cast(" ~ batch.event_time ~ " as date), or leave the table unpartitioned") -%}
  {%- endif -%}
{% endmacro %}

{% macro batch_time(value) -%}
  cast({{ spark_bucketing.sql_string(value) }} as timestamp)
{%- endmacro %}

{% macro in_batch_sql(batch) -%}
  {#- Whether a row's event time is in the batch's range [start, end). -#}
  {%- set et = 'cast(' ~ spark_bucketing.quoted([batch.event_time])[0] ~ ' as timestamp)' -%}
  ({{ et }} >= {{ spark_bucketing.batch_time(batch.start) }} and {{ et }} < {{ spark_bucketing.batch_time(batch.end) }})
{%- endmacro %}

{% macro batch_rows_sql(sql, spec, batch) -%}
  {#- The model's rows, each checked as it is written: its event time in the
      batch's range (the rows a batch replaces are exactly those of its
      range, so a row outside it would be replaced by no batch), and its
      partition the event time's date (a batch replaces only the partitions
      of its range). A row that fails stops the write: nothing published. -#}
  {%- set et = spark_bucketing.quoted([batch.event_time])[0] -%}
  {%- set part = spark_bucketing.quoted(spec.partition_by)[0] if spec.partition_by else none -%}
  select * from ({{ sql }}) as __sb_batch
  where case when {{ spark_bucketing.in_batch_sql(batch) }}{% if part %} and {{ part }} <=> cast({{ et }} as date){% endif %} then true
        else raise_error(concat({{ spark_bucketing.sql_string('spark_bucketing: model ' ~ model.unique_id ~ ': a row with ' ~ batch.event_time ~ ' = ') }},
            coalesce(cast({{ et }} as string), 'NULL'),
            {% if part %}{{ spark_bucketing.sql_string(' and ' ~ spec.partition_by[0] ~ ' = ') }}, coalesce(cast({{ part }} as string), 'NULL'),{% endif %}
            {{ spark_bucketing.sql_string(' is not a row of the batch [' ~ batch.start ~ ', ' ~ batch.end ~ ')'
                ~ (' in partition ' ~ spec.partition_by[0] ~ ' = cast(' ~ batch.event_time ~ ' as date)' if part else '')
                ~ '; nothing was published. Fix: select only rows of the batch (dbt filters the refs that have an event_time config), '
                ~ (' and compute ' ~ spec.partition_by[0] ~ ' as cast(' ~ batch.event_time ~ ' as date)' if part else '')) }})) end
{%- endmacro %}
