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
  {%- for role in ('tmp', 'incr', 'respec', 'new') -%}{%- do adapter.drop_relation(rels[role]) -%}{%- endfor -%}
  {{ return(target) }}
{% endmacro %}

{% macro build_bucketed_relation(relation, spec, columns, sql, location) %}
  {#- Creates `relation` at `location` and fills it with one file per (partition, bucket). -#}
  {%- if spec.bucket_hash == 'hive' -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- call statement('spark_bucketing_create') -%}
    {{ spark_bucketing.create_bucketed_table_sql(relation, spec, columns, location) }}
  {%- endcall -%}
  {%- set select_sql = spark_bucketing.distributed_select_sql(spec, columns, sql) -%}
  {%- set previous = spark_bucketing.apply_settings(spark_bucketing.write_settings()) -%}
  {%- call statement('main') -%}
    insert overwrite table {{ relation }}
    {%- if spec.partition_by %} partition ({{ spark_bucketing.quoted(spec.partition_by) | join(', ') }}){% endif %}
    {{ select_sql }}
  {%- endcall -%}
  {%- do spark_bucketing.restore_settings(previous) -%}
{% endmacro %}

{% macro discard(relation, location, rels, message) %}
  {#- Drops an unpublished write (entry and files) and fails the run. -#}
  {%- do adapter.drop_relation(relation) -%}
  {%- do spark_bucketing.delete_location(location, rels.scratch) -%}
  {%- do exceptions.raise_compiler_error("spark_bucketing: model '" ~ model.unique_id ~ "': " ~ message) -%}
{% endmacro %}

{% macro verify_write(relation, spec, location, rels) %}
  {%- if spec.verify_layout -%}
    {%- set violations = spark_bucketing.layout_violations(relation) -%}
    {%- if violations | length > 0 -%}
      {%- do spark_bucketing.discard(relation, location, rels,
          "the new data broke its bucket layout in " ~ (violations | length)
          ~ " files, so it was discarded and the table left as it was:\n" ~ spark_bucketing.describe_violations(violations)) -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}

{% macro table_stats(relation, partition_by, only=none) %}
  {#- partition_stats with bucketed reads off, so every file is counted. -#}
  {%- set previous = spark_bucketing.apply_settings({'spark.sql.sources.bucketing.enabled': 'false'}) -%}
  {%- set stats = spark_bucketing.partition_stats(relation, partition_by, only) -%}
  {%- do spark_bucketing.restore_settings(previous) -%}
  {{ return(stats) }}
{% endmacro %}

{% macro replace_table(rels, spec, columns, sql, old_relation, old_info) %}
  {#- A full build: write the whole table into the free folder under a side
      entry, verify it, record its metadata, then swap entries by renames. -#}
  {%- set owned = spark_bucketing.owned_locations(spec, rels.target) -%}
  {%- set location = spark_bucketing.free_location(owned, old_info) -%}
  {#- The free folder may hold an older build whose partitions the new one would not overwrite. -#}
  {%- do spark_bucketing.delete_location(location, rels.scratch, may_be_missing=true) -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.tmp, spec, columns, sql, location) -%}
  {%- do spark_bucketing.verify_write(rels.tmp, spec, location, rels) -%}
  {%- do spark_bucketing.set_properties(rels.tmp, spark_bucketing.metadata_properties(spec, spark_bucketing.table_stats(rels.tmp, spec.partition_by))) -%}
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
      {%- do spark_bucketing.delete_location(old_info.location, rels.scratch) -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}

{% macro declared_spec(info) %}
  {{ return({'hash': info.bucket_hash, 'clustered_by': info.clustered_by, 'buckets': info.buckets, 'sorted_by': info.sorted_by} if info.buckets else none) }}
{% endmacro %}

{% macro redeclare(rels, target, record, spec) %}
  {#- Re-declares the table's bucket spec (`record`, or none for unbucketed)
      by a new catalog entry over the same files: Spark cannot ALTER a bucket
      spec. The new entry gets every non-empty partition at its current
      folder and the metadata properties, then the entries swap by renames. -#}
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
  {%- for s in spark_bucketing.table_stats(target, info.partition_by) -%}
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

{% macro partition_spec_state(target, spec) %}
  {#- Per partition that holds files: its recorded spec when the record is
      current (same folder, files and rows as found now), else none. Also
      returns the metadata keys of partitions the catalog no longer lists
      (a record of a listed partition stays, even if its files are gone, so
      that bucket_metadata reports the loss). -#}
  {%- set meta = spark_bucketing.read_metadata(target) -%}
  {%- set catalog = spark_bucketing.catalog_partitions(target) -%}
  {%- set known = {} -%}
  {%- for s in spark_bucketing.table_stats(target, spec.partition_by) -%}
    {%- set rec = meta.partitions.get(s.path) -%}
    {%- set current = rec is not none and spark_bucketing.same_location(rec.location, s.location)
        and rec.files == s.files and rec.rows == s.rows -%}
    {%- do known.update({s.path: rec if current else none}) -%}
  {%- endfor -%}
  {%- set stale = [] -%}
  {%- for path in meta.partitions if path not in catalog -%}
    {%- do stale.append(meta['keys'][path]) -%}
  {%- endfor -%}
  {{ return({'partitions': known, 'stale_keys': stale, 'latest': meta.spec}) }}
{% endmacro %}

{% macro converge(rels, target, spec) %}
  {#- Declares the bucket spec that every partition follows, or none while
      they differ (or any partition's spec is unknown). -#}
  {%- set state = spark_bucketing.partition_spec_state(target, spec) -%}
  {%- do spark_bucketing.unset_properties(target, state.stale_keys) -%}
  {%- set records = state.partitions.values() | list -%}
  {%- set common = namespace(spec=state.latest if records | length == 0 else records[0]) -%}
  {%- for rec in records if common.spec is not none -%}
    {%- if rec is none or not spark_bucketing.same_spec(rec, common.spec) -%}{%- set common.spec = none -%}{%- endif -%}
  {%- endfor -%}
  {%- set declared = spark_bucketing.declared_spec(spark_bucketing.table_info(target)) -%}
  {%- if not spark_bucketing.same_spec(declared, common.spec) -%}
    {%- do spark_bucketing.redeclare(rels, target, common.spec, spec) -%}
  {%- endif -%}
{% endmacro %}
