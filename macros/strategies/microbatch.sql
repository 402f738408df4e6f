{#- incremental_strategy='microbatch': a dbt batch replaces exactly the rows
    of its event-time range. On a table partitioned by the event time's date
    it rewrites the dates of its range (emptied where the batch has no row),
    keeping the rows of a date outside the range (an hourly batch in a daily
    partition); an unpartitioned table is rewritten whole. -#}

{% macro microbatch_plan(rels, run, whole) %}
  {{ return(adapter.dispatch('microbatch_plan', 'spark_bucketing')(rels, run, whole)) }}
{% endmacro %}

{% macro batch_partitions(spec, batch) %}
  {#- The dates of the batch's range, in the session's time zone (as
      cast(event_time as date) gives them): [{partition column: 'yyyy-MM-dd'}]. -#}
  {%- set rows = run_query('select cast(d as string) from (select explode(sequence(cast(' ~ spark_bucketing.batch_time(batch.start)
      ~ ' as date), cast(' ~ spark_bucketing.batch_time(batch.end) ~ ' - interval 1 microsecond as date))) as d)') -%}
  {%- set out = [] -%}
  {%- for row in rows -%}{%- do out.append({spec.partition_by[0]: row[0]}) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro default__microbatch_plan(rels, run, whole) %}
  {%- set cols = spark_bucketing.quoted(run.columns.keys() | list) | join(', ') -%}
  {#- The old rows a batch keeps: outside its range, or with no event time. -#}
  {%- set kept -%}
    (not {{ spark_bucketing.in_batch_sql(run.incr.batch) }} or {{ spark_bucketing.quoted([run.incr.batch.event_time])[0] }} is null)
  {%- endset -%}
  {%- if whole -%}
    {%- set content -%}
      select {{ cols }} from {{ run.existing }} where {{ kept }}
      union all
      select {{ cols }} from ({{ run.new_sql }}) as __sb_new
    {%- endset -%}
    {{ return(spark_bucketing.strategy_plan(run, whole, content)) }}
  {%- endif -%}
  {%- set partitions = spark_bucketing.batch_partitions(run.spec, run.incr.batch) -%}
  {#- A date whose rows all come before the batch has none to replace: it
      takes the batch's files beside its own (appends_in_place), and is
      neither read nor emptied. -#}
  {%- set in_place = spark_bucketing.appends_in_place(run, partitions, run.incr.batch.start) -%}
  {%- set rewritten = partitions | reject('in', in_place.values() | list) | list -%}
  {%- set content -%}
    select {{ cols }} from ({{ run.new_sql }}) as __sb_new
    {%- if rewritten %}
    union all
    select {{ cols }} from {{ run.existing }}
    where {{ spark_bucketing.partition_match(run.spec.partition_by, rewritten) }} and {{ kept }}
    {%- endif %}
  {%- endset -%}
  {%- set plan = spark_bucketing.strategy_plan(run, whole, content, replaced_partitions=rewritten, added=in_place.keys() | list) -%}
  {#- The records' bound of the event times of the partitions it writes (event_time_bounds). -#}
  {%- do plan.update({'event_time_before': run.incr.batch.end}) -%}
  {{ return(plan) }}
{% endmacro %}
