{#- The steps both materializations are made of. Every step leaves the table
    readable with all its rows, and the catalog never declares a bucket spec
    that any partition's files break (see README, "Safety"). -#}

{% macro model_relations() %}
  {%- set base = model['alias'] -%}
  {%- set out = {} -%}
  {%- for role, suffix in [('target', ''), ('tmp', '__dbt_tmp'), ('backup', '__dbt_backup'), ('scratch', '__dbt_scratch'),
                          ('incr', '__dbt_incr'), ('respec', '__dbt_respec'), ('new', '__dbt_new')] -%}
    {%- do out.update({role: api.Relation.create(identifier=base ~ suffix, schema=schema, database=database, type='table')}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro checkpoint(step) %}
  {#- Fault injection for the tests: `--vars '{spark_bucketing_fail_at: <step>}'` stops the run here. -#}
  {%- if var('spark_bucketing_fail_at', none) == step -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: injected failure at step '" ~ step ~ "'") -%}
  {%- endif -%}
{% endmacro %}

{% macro recover(rels) %}
  {#- Repairs what a run that died part-way left behind; returns the target
      relation (or none). Only catalog entries are dropped here: every table
      involved is external, so their files stay. -#}
  {%- set target = adapter.get_relation(database=rels.target.database, schema=rels.target.schema, identifier=rels.target.identifier) -%}
  {%- set backup = adapter.get_relation(database=rels.backup.database, schema=rels.backup.schema, identifier=rels.backup.identifier) -%}
  {%- if target is none and backup is not none -%}
    {#- A swap stopped between its two renames: the backup is the live table. -#}
    {%- do adapter.rename_relation(backup, rels.target.incorporate(type=backup.type)) -%}
    {%- set target = adapter.get_relation(database=rels.target.database, schema=rels.target.schema, identifier=rels.target.identifier) -%}
  {%- elif backup is not none -%}
    {%- do adapter.drop_relation(backup) -%}
  {%- endif -%}
  {%- for role in ('tmp', 'incr', 'respec', 'new') -%}{%- do spark_bucketing.drop_if_listed(rels[role]) -%}{%- endfor -%}
  {{ return(target) }}
{% endmacro %}

{% macro build_bucketed_relation(relation, spec, columns, sql, location, bucketed_rows=false) %}
  {#- Creates `relation` at `location` and fills it with one file per
      (partition, bucket). The folder is new or emptied, so a plain INSERT
      INTO writes it: the session's partitionOverwriteMode (which other
      models, such as dbt-spark's insert_overwrite, set) plays no part, and
      no session setting is changed. `bucketed_rows`: `sql` already holds
      each bucket's rows in one task (merge_output_is_bucketed), so they are
      written as they are, without the routed shuffle. -#}
  {%- if spec.bucket_hash == 'hive' -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- call statement('spark_bucketing_create') -%}
    {{ spark_bucketing.create_bucketed_table_sql(relation, spec, columns, location) }}
  {%- endcall -%}
  {%- if spec.bucket_hash == 'hive' -%}
    {#- Spark writes a Hive Parquet/ORC table through its own writer, which
        takes the table's serde properties as write options. -#}
    {%- call statement('spark_bucketing_write_options') -%}
      alter table {{ relation }} set serdeproperties ('maxRecordsPerFile' = '0')
    {%- endcall -%}
  {%- endif -%}
  {%- call statement('main') -%}
    insert into table {{ relation }}
    {%- if spec.partition_by %} partition ({{ spark_bucketing.quoted(spec.partition_by) | join(", ") }}){% endif %}
    {%- if bucketed_rows %}
    select {{ spark_bucketing.quoted(spark_bucketing.partition_columns_last(columns.keys() | list, spec.partition_by)) | join(', ') }} from ({{ sql }}) as __sb_bucketed
    {%- else %}
    {{ spark_bucketing.distributed_select_sql(spec, columns, sql) }}
    {%- endif %}
  {%- endcall -%}
{% endmacro %}

{% macro discard(relation, location, rels, message) %}
  {#- Drops an unpublished write (entry and files) and fails the run. -#}
  {%- do adapter.drop_relation(relation) -%}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do exceptions.raise_compiler_error("spark_bucketing: model '" ~ model.unique_id ~ "': " ~ message) -%}
{% endmacro %}

{% macro verify_write(relation, spec, location, rels, other=none) %}
  {#- Checks a new write (unless verify_layout is false) and returns its
      partition stats, both from one query: {'stats': [...], 'other': the
      partition stats of `other`, a files_sql listed by the same query}. A
      write that breaks its layout is discarded and fails the run. -#}
  {%- if not spec.verify_layout -%}
    {%- set listing -%}
      select *, false as __sb_other from ({{ spark_bucketing.files_sql(relation, spec.partition_by) }}) as __sb_new
      {%- if other is not none %}
      union all
      select *, true as __sb_other from ({{ other }}) as __sb_old
      {%- endif %}
    {%- endset -%}
    {%- set written, listed = spark_bucketing.split_other(run_query(spark_bucketing.with_folders_sql(listing, spec.partition_by | length))) -%}
    {{ return({'stats': spark_bucketing.folder_stats(written, spec.partition_by), 'other': spark_bucketing.folder_stats(listed, spec.partition_by)}) }}
  {%- endif -%}
  {%- set checked = spark_bucketing.checked_stats(relation, spec, other) -%}
  {%- if checked.problems > 0 -%}
    {%- set more = checked.problems - checked.lines | length -%}
    {%- do spark_bucketing.discard(relation, location, rels,
        "the new data broke its bucket layout in " ~ checked.problems
        ~ " files, so it was discarded and the table left as it was:\n  " ~ (checked.lines | join('\n  '))
        ~ ('\n  ... and ' ~ more ~ ' more files' if more > 0 else '')) -%}
  {%- endif -%}
  {{ return(checked) }}
{% endmacro %}

{% macro replace_table(rels, spec, columns, sql, old_relation, old_info, accounting=none) %}
  {#- A full build: write the whole table into the free folder under a side
      entry, verify it, record its metadata, then swap entries by renames.
      `accounting`: a merge's row accounting (merge_row_accounting). -#}
  {%- set owned = spark_bucketing.owned_locations(spec, rels.target) -%}
  {%- set location = spark_bucketing.free_location(owned, old_info) -%}
  {#- The free folder may hold an older build whose partitions the new one would not overwrite. -#}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.tmp, spec, columns, sql, location) -%}
  {%- set stats = spark_bucketing.verify_write(rels.tmp, spec, location, rels).stats -%}
  {%- if accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(rels.tmp, location, rels, spec.partition_by, stats, accounting) -%}
  {%- endif -%}
  {%- do spark_bucketing.set_properties(rels.tmp, spark_bucketing.metadata_properties(spec, stats, accounting)) -%}
  {%- do spark_bucketing.checkpoint('before_swap') -%}

  {%- if old_relation is not none -%}
    {%- do adapter.rename_relation(old_relation, rels.backup.incorporate(type=old_relation.type)) -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint('mid_swap') -%}
  {%- do adapter.rename_relation(rels.tmp, rels.target) -%}
  {%- if old_relation is not none -%}
    {%- do adapter.drop_relation(rels.backup.incorporate(type=old_relation.type)) -%}
    {%- if old_info and old_info.type == 'external' and spark_bucketing.owns_location(old_info.location, owned) -%}
      {#- An external table's files outlive its DROP; the previous build's folder is ours to clear. -#}
      {%- do spark_bucketing.delete_locations([old_info.location], rels.scratch) -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}

{% macro declared_spec(info) %}
  {{ return({'hash': info.bucket_hash, 'clustered_by': info.clustered_by, 'buckets': info.buckets, 'sorted_by': info.sorted_by} if info.buckets else none) }}
{% endmacro %}

{% macro redeclare(rels, target, record, spec, stats=none) %}
  {#- Re-declares the table's bucket spec (`record`, or none for unbucketed)
      by a new catalog entry over the same files: Spark cannot ALTER a bucket
      spec. The new entry gets every non-empty partition at its current
      folder and the metadata properties, then the entries swap by renames.
      `stats`: the table's partition_stats, when the caller has them. -#}
  {%- set info = spark_bucketing.table_info(target) -%}
  {%- set decl = spec.copy() -%}
  {%- do decl.update({'buckets': none, 'partition_by': info.partition_by}) -%}
  {%- if record -%}
    {%- do decl.update({'bucket_hash': record.hash, 'clustered_by': record.clustered_by, 'buckets': record.buckets, 'sorted_by': record.sorted_by}) -%}
  {%- endif -%}
  {%- do adapter.drop_relation(rels.respec) -%}
  {%- call statement('spark_bucketing_redeclare') -%}
    {{ spark_bucketing.create_bucketed_table_sql(rels.respec, decl, info.columns, info.location) }}
  {%- endcall -%}
  {#- Every partition the catalog lists: at the folder its files are in, or,
      for a partition without files, where the catalog has it. -#}
  {%- set catalog = spark_bucketing.catalog_partitions(target) -%}
  {%- set entries = [] -%}
  {%- set found = [] -%}
  {%- set stats = stats if stats is not none else spark_bucketing.partition_stats(target, info.partition_by) -%}
  {%- for s in stats -%}
    {%- do entries.append((s['values'], s.location)) -%}{%- do found.append(s['values']) -%}
  {%- endfor -%}
  {%- for path, values in catalog.items() if not spark_bucketing.values_in(values, found, info.partition_by) -%}
    {%- do entries.append((values, spark_bucketing.partition_location(target, values))) -%}
  {%- endfor -%}
  {%- for batch in entries | batch(100) -%}
    {%- call statement('spark_bucketing_add_partitions') -%}
      alter table {{ rels.respec }} add
      {%- for values, location in batch %}
        {{ spark_bucketing.partition_clause(values) }} location {{ spark_bucketing.sql_string(location) }}
      {%- endfor %}
    {%- endcall -%}
  {%- endfor -%}
  {%- set props = {} -%}
  {%- for key, value in spark_bucketing.table_properties(target).items() if key.startswith(spark_bucketing.metadata_prefix()) -%}
    {%- do props.update({key: value}) -%}
  {%- endfor -%}
  {%- do spark_bucketing.set_properties(rels.respec, props) -%}
  {%- do spark_bucketing.checkpoint('redeclare_before_swap') -%}
  {%- do adapter.rename_relation(target, rels.backup) -%}
  {%- do spark_bucketing.checkpoint('redeclare_mid_swap') -%}
  {%- do adapter.rename_relation(rels.respec, rels.target) -%}
  {%- do adapter.drop_relation(rels.backup) -%}
  {%- do log("spark_bucketing: " ~ rels.target ~ " now declares " ~ spark_bucketing.describe_spec(record), info=true) -%}
{% endmacro %}

{% macro converge(rels, spec, published) %}
  {#- After partitions are published (see write_partitions): drops the
      records of partitions the catalog no longer lists, and declares the
      bucket spec every listed partition's record agrees on, or none while
      they differ (or one has no record). Decided from the metadata and the
      catalog's list; only a change to a bucketed declaration reads the
      other partitions (verified_spec). -#}
  {%- do spark_bucketing.unset_properties(rels.target, published.unlisted_keys) -%}
  {%- set records = published.records.values() | list -%}
  {%- set common = namespace(spec=spark_bucketing.spec_record(spec) if records | length == 0 else records[0]) -%}
  {%- for rec in records if common.spec is not none -%}
    {%- if rec is none or not spark_bucketing.same_spec(rec, common.spec) -%}{%- set common.spec = none -%}{%- endif -%}
  {%- endfor -%}
  {%- if not spark_bucketing.same_spec(published.declared, common.spec) -%}
    {%- set stats = none if common.spec is none else spark_bucketing.partition_stats(rels.target, spec.partition_by) -%}
    {%- set target_spec = common.spec if common.spec is none
        else spark_bucketing.verified_spec(rels.target, stats, common.spec, published) -%}
    {%- if not spark_bucketing.same_spec(published.declared, target_spec) -%}
      {%- do spark_bucketing.redeclare(rels, rels.target, target_spec, spec, stats) -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}

{% macro verified_spec(target, stats, record, published) %}
  {#- `record` when every partition this run did not write still holds the
      folder, files and rows its record says (so its files follow the spec
      the record names), else none. Someone may have written files into a
      partition behind the package's back: its record is then stale, and
      declaring the spec could promise a layout those files break. The run's
      own partitions were verified by verify_switch. -#}
  {%- for s in stats if s.path not in published.written -%}
    {%- set rec = published.records.get(s.path) -%}
    {%- if rec is none or not spark_bucketing.same_location(rec.location, s.location) or rec.files != s.files or rec.rows != s.rows -%}
      {%- do log("spark_bucketing: partition " ~ s.path ~ " of " ~ target ~ " holds " ~ s.rows ~ " rows in " ~ s.files
          ~ " files, not what its record says; the table stays declared unbucketed until the partition is rewritten", info=true) -%}
      {{ return(none) }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(record) }}
{% endmacro %}
