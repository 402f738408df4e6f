{#- A replaced partition's bucket spec in the metastore, where Spark SQL
    alone points the partition at its new folder (no session extension).
    ALTER TABLE .. SET LOCATION writes the partition's storage descriptor
    anew, without the table's bucket columns and count, and Trino refuses a
    bucketed table any of whose partitions has none. LOAD DATA of an empty
    folder into the partition writes the table's spec back (Hive's
    loadPartition inherits the table's storage: formats, bucket and sort
    columns, count), keeps the partition's folder (the empty one is on the
    same file system) and moves no file (docs/trino.md). -#}

{% macro restores_bucket_specs(declared) %}
  {#- Whether the replaced partitions of a table that declares `declared`
      (a spec record, or none) need their spec written back: a Hive-hash
      table declared bucketed is a Hive table whose storage holds the spec,
      which Trino and Hive read per partition. Spark's hash is declared in
      Spark's own table properties (and LOAD DATA refuses its tables); an
      unbucketed declaration has no spec to keep. -#}
  {{ return(declared is not none and declared.get('hash') == 'hive') }}
{% endmacro %}

{% macro mark_bucket_specs_restoring(rels, replaced) %}
  {#- Before the switch: records `replaced` ({path: values}) under the run's restoring_key. -#}
  {%- do spark_bucketing.set_properties(rels.target, {spark_bucketing.restoring_key(rels.run_id): tojson(replaced)}) -%}
{% endmacro %}

{% macro empty_folder(rels, table_location) %}
  {#- An empty folder of the run's own, under the table's `_bucketing/`
      folder (the file system of its partitions): the metastore creates a
      table's missing folder, and an external table's drop keeps it. Made
      once per run; the folder goes with the run's other folders. -#}
  {%- if rels.get('empty_folder') -%}{{ return(rels.empty_folder) }}{%- endif -%}
  {%- set folder = table_location.rstrip('/') ~ '/_bucketing/' ~ rels.run_id ~ '/_empty' -%}
  {%- call statement('spark_bucketing_empty_folder') -%}
    create table {{ rels.scratch }} (unused int) stored as textfile location {{ spark_bucketing.sql_string(folder) }}
  {%- endcall -%}
  {%- call statement('spark_bucketing_empty_folder_entry') -%}drop table {{ rels.scratch }}{%- endcall -%}
  {%- do rels.update({'empty_folder': folder}) -%}
  {{ return(folder) }}
{% endmacro %}

{% macro restore_bucket_spec_sql(target, folder, values) %}
  {#- The statement that writes the table's bucket spec back into partition `values`, from the empty `folder`. -#}
  {{ return('load data inpath ' ~ spark_bucketing.sql_string(folder) ~ ' into table ' ~ target ~ ' ' ~ spark_bucketing.partition_clause(values)) }}
{% endmacro %}

{% macro restore_bucket_specs(rels, table_location, replaced) %}
  {#- Writes the table's bucket spec back into each partition of `replaced`
      ({path: values}): one LOAD DATA of the run's empty folder each. -#}
  {%- if not replaced -%}{{ return(none) }}{%- endif -%}
  {%- set folder = spark_bucketing.empty_folder(rels, table_location) -%}
  {%- for values in replaced.values() -%}
    {%- call statement('spark_bucketing_restore_bucket_spec') -%}{{ spark_bucketing.restore_bucket_spec_sql(rels.target, folder, values) }}{%- endcall -%}
  {%- endfor -%}
{% endmacro %}

{% macro restore_dead_runs_bucket_specs(rels, info, restoring, catalog) %}
  {#- Under the commit lock, before this run plans its switch: the specs a
      run that died after its switch (`restoring`: restoring_entries) did
      not write back, for the partitions still listed (`catalog`: their
      paths; LOAD DATA would create one that is not), then its entries
      unset. A live run's entry is gone by the time another holds the lock. -#}
  {%- if not restoring -%}{{ return(none) }}{%- endif -%}
  {%- set listed = {} -%}
  {%- for replaced in restoring.values() -%}
    {%- for path, values in replaced.items() if path in catalog -%}{%- do listed.update({path: values}) -%}{%- endfor -%}
  {%- endfor -%}
  {%- do log("spark_bucketing: " ~ rels.target ~ ": writing back the bucket spec of " ~ listed | length
      ~ " partition(s) a run that died after its switch left without it", info=true) -%}
  {%- do spark_bucketing.restore_bucket_specs(rels, info.location, listed) -%}
  {%- do spark_bucketing.unset_properties(rels.target, restoring.keys() | list) -%}
{% endmacro %}
