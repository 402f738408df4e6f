{#- Changing an incremental table's columns (on_schema_change), in the
    catalog only, before the run writes: the run's rows are then written in
    the new columns. Old partitions keep their files. -#}

{% macro change_table_columns(rels, spec, query_columns, plan) %}
  {#- Under the table's commit lock, since another run may change the same
      columns at once: the table's columns are read again and only what is
      still missing is changed. Adding columns is one ALTER TABLE; dropping
      or retyping re-declares the table over the same files (redeclare), as
      Spark ALTERs neither on Parquet or ORC tables. Returns the table's
      table_info after the change. -#}
  {%- do spark_bucketing.acquire_commit_lock(rels) -%}
  {%- set info = spark_bucketing.table_info(rels.target) -%}
  {%- set changes = spark_bucketing.schema_changes(query_columns, info.columns) -%}
  {%- set redeclare = plan.redeclare and changes is not none and (changes.removed or changes.changed) -%}
  {%- if redeclare -%}
    {%- set columns = spark_bucketing.redeclared_columns(query_columns, info) -%}
    {#- Every partition at the folder the catalog holds for it (no file is read). -#}
    {%- set entries = spark_bucketing.declared_partitions(rels.target, info.partition_by, []) if info.partition_by else [] -%}
    {%- do spark_bucketing.redeclare(rels, rels.target, spark_bucketing.declared_spec(info), spec, entries=entries, columns=columns) -%}
  {%- elif changes is not none and plan.add and changes.added -%}
    {%- call statement('spark_bucketing_add_columns') -%}
      alter table {{ rels.target }} add columns (
      {%- for name, type in changes.added.items() %}
        {{ spark_bucketing.quoted([name])[0] }} {{ type }}{{ spark_bucketing.column_comment(name) }}{{ ',' if not loop.last }}
      {%- endfor %}
      )
    {%- endcall -%}
  {%- endif -%}
  {%- if changes is not none -%}
    {%- do log("spark_bucketing: " ~ rels.target ~ ": on_schema_change added " ~ (changes.added.keys() | list if plan.add else [])
        ~ (", dropped " ~ (changes.removed.keys() | list) ~ ", retyped " ~ changes.changed if redeclare else ''), info=true) -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint('after_schema_change') -%}
  {%- do spark_bucketing.release_commit_lock(rels) -%}
  {{ return(spark_bucketing.table_info(rels.target)) }}
{% endmacro %}

{% macro redeclared_columns(query_columns, info) %}
  {#- The query's columns, spelled as the table spells those it has, with
      the partition columns last (as the table declares them). -#}
  {%- set spelled = {} -%}{%- for n in info.columns -%}{%- do spelled.update({n | lower: n}) -%}{%- endfor -%}
  {%- set parts = info.partition_by | map('lower') | list -%}
  {%- set out = {} -%}
  {%- for name, type in query_columns.items() if name | lower not in parts -%}{%- do out.update({spelled.get(name | lower, name): type}) -%}{%- endfor -%}
  {%- set query = {} -%}{%- for n, t in query_columns.items() -%}{%- do query.update({n | lower: t}) -%}{%- endfor -%}
  {%- for name in info.partition_by -%}{%- do out.update({name: query[name | lower]}) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}
