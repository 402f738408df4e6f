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

{% macro end_payload(keep, delete, set_props={}, unset_keys=[]) %}
  {#- What ends a commit, as the extension takes it: the statement of
      end_commit, or a switch that ends the commit itself
      (switch_in_one_statement's `end`). Under the commit lock: sets the
      table's properties `set_props` and unsets `unset_keys` (the replaced
      folders kept and let go: retirement), then deletes the folders under
      the table's `_bucketing/` of runs that started more than
      leftover_grace_period ago and that no partition points into, nor a
      replaced folder kept for its retention (`keep`); deletes the run's own
      folders in `delete` (it refuses the whole list, deleting nothing, when
      a folder is outside the table's folder); then releases the commit
      lock. One listing of `_bucketing/`; the partitions are read only when
      a dead run's folder is there. -#}
  {{ return({'started_before': spark_bucketing.epoch_now() - spark_bucketing.leftover_grace_period(), 'keep': keep,
             'delete': delete, 'release_lock': model.get('spark_bucketing_lock_entry'), 'table_properties': spark_bucketing.unredacted(set_props),
             'unset_properties': unset_keys}) }}
{% endmacro %}

{% macro end_commit(rels, keep, delete, set_props={}, unset_keys=[]) %}
  {#- Ends the commit (end_payload) through the session extension, in one statement. -#}
  {%- set payload = spark_bucketing.end_payload(keep, delete, set_props, unset_keys) -%}
  {%- set deleted = run_query(spark_bucketing.clean_statement() ~ ' ' ~ rels.target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(payload))) -%}
  {%- do spark_bucketing.commit_ended(rels, deleted.columns[0].values()) -%}
{% endmacro %}

{% macro commit_ended(rels, deleted) %}
  {#- After the statement that ended the commit and released its lock: `deleted`, the dead runs' folders it deleted. -#}
  {%- do spark_bucketing.forget_commit_lock(rels) -%}
  {%- for folder in deleted -%}
    {%- do log("spark_bucketing: deleted " ~ folder ~ ", the folder of a run that did not finish", info=true) -%}
  {%- endfor -%}
{% endmacro %}
