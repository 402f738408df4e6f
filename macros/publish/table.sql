{#- Publishing a whole table: write it into the free one of the model's two
    folders under a side entry, verify it, record its metadata, then swap the
    entries by renames. A failure at any step before the swap leaves the
    previous table and its rows untouched. The whole build holds the
    table's commit lock: two builds would pick the same free folder, and a
    swap must not undo another run's commit. -#}

{% macro replace_table(rels, spec, columns, sql, old_relation, old_info, accounting=none) %}
  {#- `accounting`: a merge's row accounting (merge_row_accounting). -#}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- do spark_bucketing.require_records_extension(rels.target, spark_bucketing.extension_loaded(), "cannot be built") -%}
  {%- endif -%}
  {%- do spark_bucketing.acquire_commit_lock(rels) -%}
  {#- Another run may have rebuilt or re-declared the table since this run looked. -#}
  {%- set planned_new = old_relation is none -%}
  {%- set old_relation = spark_bucketing.listed_relation(rels.target) -%}
  {%- if planned_new and old_relation is not none and model.config.materialized == 'bucketed_incremental' -%}
    {%- do spark_bucketing.model_error("another run created " ~ rels.target ~ " while this run waited to build it from scratch,"
        ~ " from its own rows only. This run published nothing. Rerunning is safe: the rerun writes its partitions into that table") -%}
  {%- endif -%}
  {%- set old_info = spark_bucketing.table_info(old_relation) if old_relation is not none and old_relation.is_table else none -%}
  {#- Only a lock holder builds or re-declares: such entries of other runs are dead runs'. -#}
  {%- do spark_bucketing.drop_dead_runs_entries(rels, ['tmp', 'respec'], 0) -%}
  {%- set owned = spark_bucketing.owned_locations(spec, rels.target) -%}
  {%- set location = spark_bucketing.free_location(owned, old_info) -%}
  {#- The free folder may hold an older build whose partitions the new one would not overwrite. -#}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.tmp, spec, columns, sql, location) -%}
  {%- set written = {'relation': rels.tmp, 'folder': none} -%}
  {%- set stats = spark_bucketing.verify_write(written, spec, location, rels).stats -%}
  {%- if accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(written, location, rels, spec.partition_by, stats, accounting) -%}
  {%- endif -%}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- do spark_bucketing.record_partitions(rels.tmp, spec, stats, accounting) -%}
  {%- else -%}
    {%- do spark_bucketing.set_properties(rels.tmp, spark_bucketing.metadata_properties(spec, stats, accounting)) -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint('before_swap') -%}
  {%- do spark_bucketing.swap_in(rels.tmp, old_relation, rels) -%}
  {%- if old_relation is not none and old_info and old_info.type == 'external' and spark_bucketing.owns_location(old_info.location, owned) -%}
    {#- An external table's files outlive its DROP; the previous build's folder is ours to clear. -#}
    {%- do spark_bucketing.delete_locations([old_info.location], rels.scratch) -%}
  {%- endif -%}
  {%- do spark_bucketing.release_commit_lock(rels) -%}
{% endmacro %}
