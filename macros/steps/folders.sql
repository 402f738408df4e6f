{#- Deleting folders the package owns (see catalog/locations.sql). -#}

{% macro delete_locations(locations, scratch_relation) %}
  {#- Spark SQL has no statement that deletes a folder, but dropping a managed
      table deletes its folder and the folders of its partitions, wherever
      they are. So one scratch managed table takes every folder as a
      partition, then is dropped: three statements for any number of folders.
      The metastore creates a partition's folder when it is missing, so a
      folder that is already gone is no error (and logs none). -#}
  {%- if not locations -%}{{ return(none) }}{%- endif -%}
  {%- do spark_bucketing.drop_if_listed(scratch_relation) -%}
  {%- call statement('spark_bucketing_scratch') -%}
    create table {{ scratch_relation }} (unused int, __sb_folder int) using parquet partitioned by (__sb_folder)
  {%- endcall -%}
  {%- for batch in locations | batch(500) -%}
    {%- set first = loop.index0 * 500 -%}
    {%- call statement('spark_bucketing_scratch_folders') -%}
      alter table {{ scratch_relation }} add
      {%- for location in batch %}
        partition (__sb_folder = {{ first + loop.index0 }}) location {{ spark_bucketing.sql_string(location) }}
      {%- endfor %}
    {%- endcall -%}
  {%- endfor -%}
  {%- do adapter.drop_relation(scratch_relation) -%}
{% endmacro %}

{% macro delete_statement() %}
  {#- The extension's statement that deletes folders inside a table's folder;
      tied to DeleteStatement in scala/Contracts.scala. -#}
  {{ return('spark_bucketing delete folders') }}
{% endmacro %}

{% macro delete_table_folders(target, locations) %}
  {#- Deletes folders inside `target`'s folder with the session extension's
      one statement (it refuses the whole list, deleting nothing, when a
      folder is outside the table's folder). -#}
  {%- if not locations -%}{{ return(none) }}{%- endif -%}
  {%- call statement('spark_bucketing_delete_folders') -%}
    {{ spark_bucketing.delete_statement() }} {{ target }} locations {{ spark_bucketing.sql_string(tojson(locations)) }}
  {%- endcall -%}
{% endmacro %}

{% macro clean_statement() %}
  {#- The extension's statement that deletes dead runs' folders; tied to CleanStatement in scala/Contracts.scala. -#}
  {{ return('spark_bucketing clean folders') }}
{% endmacro %}

{% macro delete_dead_runs_folders(target, keep) %}
  {#- Through the session extension, under the commit lock: deletes the
      folders under the table's `_bucketing/` of runs that started more than
      leftover_grace_period ago and that no partition points into, nor a
      replaced folder kept for its retention (`keep`). One listing of
      `_bucketing/`; the partitions are read only when such a folder is
      there. -#}
  {%- set payload = {'started_before': spark_bucketing.epoch_now() - spark_bucketing.leftover_grace_period(), 'keep': keep,
                     'release_lock_on_failure': model.get('spark_bucketing_lock_entry')} -%}
  {%- set deleted = run_query(spark_bucketing.clean_statement() ~ ' ' ~ target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(payload))) -%}
  {%- for row in deleted -%}
    {%- do log("spark_bucketing: deleted " ~ row[0] ~ ", the folder of a run that did not finish", info=true) -%}
  {%- endfor -%}
{% endmacro %}
