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

{% macro clean_statement() %}
  {#- The extension's statement that ends a commit (end_commit); tied to CleanStatement in scala/Contracts.scala. -#}
  {{ return('spark_bucketing clean folders') }}
{% endmacro %}

{% macro end_commit(rels, keep, delete, set_props={}, unset_keys=[]) %}
  {#- Through the session extension, in one statement, under the commit
      lock: sets the table's properties `set_props` and unsets `unset_keys`
      (the replaced folders kept and let go: retirement), then deletes the
      folders under the table's `_bucketing/` of runs that
      started more than leftover_grace_period ago and that no partition
      points into, nor a replaced folder kept for its retention (`keep`);
      deletes the run's own folders in `delete` (it refuses the whole list,
      deleting nothing, when a folder is outside the table's folder); then
      releases the commit lock. One listing of `_bucketing/`; the
      partitions are read only when a dead run's folder is there. -#}
  {%- set entry = model.get('spark_bucketing_lock_entry') -%}
  {%- set payload = {'started_before': spark_bucketing.epoch_now() - spark_bucketing.leftover_grace_period(), 'keep': keep,
                     'delete': delete, 'release_lock': entry, 'table_properties': spark_bucketing.unredacted(set_props),
                     'unset_properties': unset_keys} -%}
  {%- set deleted = run_query(spark_bucketing.clean_statement() ~ ' ' ~ rels.target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(payload))) -%}
  {%- do spark_bucketing.forget_commit_lock(rels) -%}
  {%- for row in deleted -%}
    {%- do log("spark_bucketing: deleted " ~ row[0] ~ ", the folder of a run that did not finish", info=true) -%}
  {%- endfor -%}
{% endmacro %}
