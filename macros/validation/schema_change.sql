{#- on_schema_change: what an incremental run does when the query's columns
    differ from the table's, decided before anything is written. The
    table's columns change in the catalog only: old files are read by
    column name (Parquet, ORC), so a column added reads NULL in them, a
    column dropped is skipped, and a widened type is read back widened. -#}

{% macro on_schema_change_config() %}
  {%- set value = config.get('on_schema_change') or 'ignore' -%}
  {%- if value not in ('ignore', 'fail', 'append_new_columns', 'sync_all_columns') -%}
    {%- do spark_bucketing.config_error('on_schema_change', "must be 'ignore', 'fail', 'append_new_columns' or 'sync_all_columns', got '" ~ value ~ "'",
        "see docs/incremental.md, section on schema changes") -%}
  {%- endif -%}
  {%- if spark_bucketing.contract_enforced() and value not in ('append_new_columns', 'fail') -%}
    {#- dbt's own rule for incremental models with a contract (checked at parse time for materialized='incremental' only). -#}
    {%- do spark_bucketing.config_error('on_schema_change', "is '" ~ value ~ "', but models materialized incrementally with contracts enabled must set on_schema_change to 'append_new_columns' or 'fail' (dbt's rule)",
        "set on_schema_change='append_new_columns' or 'fail'") -%}
  {%- endif -%}
  {{ return(value) }}
{% endmacro %}

{% macro readable_widening(old, new, widens=true) %}
  {#- Whether files written with type `old` read back as `new` in Parquet
      and ORC (tests/test_schema_change.py, on each Spark of the version
      matrix). `widens`: whether the table's reader widens at all
      (files_widen). -#}
  {%- if not widens -%}{{ return(false) }}{%- endif -%}
  {%- set ints = ['tinyint', 'smallint', 'int', 'bigint'] -%}
  {%- if old in ints and new in ints -%}{{ return(ints.index(new) > ints.index(old)) }}{%- endif -%}
  {%- if old == 'float' and new == 'double' -%}{{ return(true) }}{%- endif -%}
  {{ return(false) }}
{% endmacro %}

{% macro files_widen(file_format) %}
  {#- Whether Spark reads a column of `file_format` files as a wider type:
      Spark before 4.0 reads no Parquet column so ("Parquet column cannot be
      converted"); its ORC reader does. Asks the session's version (one
      query) for Parquet only. -#}
  {{ return(file_format != 'parquet' or spark_bucketing.spark_version()[0] >= 4) }}
{% endmacro %}

{% macro schema_change_plan(changes, spec, on_schema_change) %}
  {#- What the run does about `changes` (schema_changes): {'add': {name:
      type} to add to the table, 'redeclare': whether columns are dropped
      or retyped (Spark ALTERs neither on these tables: the table is
      re-declared over the same files), 'target': 'table' (the rows take
      the table's columns: new columns dropped, changed types cast) or
      'query' (the table takes the query's columns)}. Fails before
      anything is written where the change cannot be made without
      rewriting the table. -#}
  {%- set fix = "run once with --full-refresh to rebuild the table with the new columns" -%}
  {%- if on_schema_change == 'fail' -%}
    {%- do exceptions.raise_compiler_error(spark_bucketing.out_of_sync_message(changes)) -%}
  {%- endif -%}
  {%- set keys = (spec.clustered_by + spec.sorted_by + spec.partition_by) | map('lower') | list -%}
  {%- for c in changes.changed if c.column | lower in keys -%}
    {%- do spark_bucketing.config_error('on_schema_change', "column '" ~ c.column ~ "' changed type from " ~ c.old ~ " to " ~ c.new
        ~ ", and it is a bucket, sort or partition column: every file's placement depends on its values", fix) -%}
  {%- endfor -%}
  {%- if on_schema_change == 'ignore' and changes.removed -%}
    {%- do spark_bucketing.config_error('on_schema_change', "the query no longer returns the table's columns " ~ (changes.removed.keys() | join(', '))
        ~ ", and on_schema_change='ignore' keeps the table's columns without anything to fill them with",
        "set on_schema_change='append_new_columns' (the new rows hold NULL there) or 'sync_all_columns' (the columns are dropped from the table), or " ~ fix) -%}
  {%- endif -%}
  {%- if on_schema_change == 'sync_all_columns' -%}
    {%- set widens = changes.changed | length == 0 or spark_bucketing.files_widen(spec.file_format) -%}
    {%- for c in changes.changed if not spark_bucketing.readable_widening(c.old, c.new, widens) -%}
      {%- do spark_bucketing.config_error('on_schema_change', "column '" ~ c.column ~ "' changed type from " ~ c.old ~ " to " ~ c.new
          ~ ", which the old partitions' files cannot be read back as (on Spark 4, a widening of an integer type, or float to double,"
          ~ " can; Spark 3.5 reads no Parquet column as a wider type)", fix) -%}
    {%- endfor -%}
    {{ return({'add': changes.added, 'redeclare': (changes.removed or changes.changed) | length > 0, 'target': 'query'}) }}
  {%- endif -%}
  {{ return({'add': changes.added if on_schema_change == 'append_new_columns' else {}, 'redeclare': false, 'target': 'table'}) }}
{% endmacro %}

{% macro out_of_sync_message(changes) %}
  {#- dbt's own message for on_schema_change='fail'. -#}
  {%- set msg -%}
The source and target schemas on this incremental model are out of sync!
              They can be reconciled in several ways:
                - set the `on_schema_change` config to either append_new_columns or sync_all_columns, depending on your situation.
                - Re-run the incremental model with `full_refresh: True` to update the target schema.
                - update the schema manually and re-run the process.

              Additional troubleshooting context:
                 Source columns not in target: {{ changes.added.keys() | list }}
                 Target columns not in source: {{ changes.removed.keys() | list }}
                 New column types: {{ changes.changed }}
  {%- endset -%}
  {{ return(msg) }}
{% endmacro %}

{% macro aligned_sql(sql, query_columns, target_columns, keep=[]) -%}
  {#- The model's rows in the columns `target_columns` (name -> type), by
      name: a column the query lacks is NULL, a type the query gives
      otherwise is cast (as an INSERT into the table would; a value that
      does not fit fails the write). `keep`: query columns passed through
      as they are (a merge's delete marker). -#}
  {%- set query = {} -%}{%- for n, t in query_columns.items() -%}{%- do query.update({n | lower: (n, t | lower)}) -%}{%- endfor -%}
  select
  {%- for name, type in target_columns.items() %}
    {% set q = query.get(name | lower) -%}
    {%- if q is none -%}cast(null as {{ type }})
    {%- elif q[1] != type | lower -%}cast(__sb_q.{{ spark_bucketing.quoted([q[0]])[0] }} as {{ type }})
    {%- else -%}__sb_q.{{ spark_bucketing.quoted([q[0]])[0] }}{%- endif %} as {{ spark_bucketing.quoted([name])[0] }}{{ ',' if not loop.last or keep }}
  {%- endfor %}
  {%- for name in keep %}
    __sb_q.{{ spark_bucketing.quoted([name])[0] }}{{ ',' if not loop.last }}
  {%- endfor %}
  from ({{ sql }}) as __sb_q
{%- endmacro %}
