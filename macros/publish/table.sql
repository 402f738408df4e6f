{#- Publishing a whole table: write it into a folder of the run's own under a
    side entry, verify it, record its metadata, then swap the entries by
    renames under the table's commit lock. A failure at any step before the
    swap leaves the previous table and its rows untouched. The write runs
    beside other runs and holds no lock (it may take hours: a lock held that
    long would be taken for a dead run's); only the swap is serialized. -#}

{% macro replace_table(rels, spec, columns, sql, old_relation, accounting=none, planned=none, event_time_before=none) %}
  {#- `accounting`: a merge's row accounting (merge_row_accounting).
      `event_time_before`: where the rows are a microbatch batch's, the end
      of its range, each partition's record's bound (event_time_bounds).
      `planned`: for rows made from the table's old rows (an incremental
      run's rewrite of the whole table), {'commit', 'location'} of the table
      as the run read it; a commit of another run since is a conflict, and
      the run publishes nothing. Otherwise the last build to swap wins whole,
      as stock's. -#}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- do spark_bucketing.require_records_extension(rels.target, spark_bucketing.extension_loaded(), "cannot be built") -%}
  {%- endif -%}
  {%- set owned = spark_bucketing.owned_locations(spec, rels.target) -%}
  {%- set location = spark_bucketing.build_location(owned, rels.run_id) -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.tmp, spec, columns, sql, location) -%}
  {%- set written = {'relation': rels.tmp, 'folder': none} -%}
  {%- set stats = spark_bucketing.verify_write(written, spec, location, rels).stats -%}
  {%- if accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(written, location, rels, spec.partition_by, stats, accounting) -%}
  {%- endif -%}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- do spark_bucketing.record_partitions(rels.tmp, spec, stats, accounting) -%}
  {%- else -%}
    {%- set props = spark_bucketing.metadata_properties(spec, stats, accounting) -%}
    {%- for s in stats if event_time_before is not none and spec.partition_by -%}
      {%- do spark_bucketing.set_event_time_before(props, s.path, event_time_before) -%}
    {%- endfor -%}
    {%- do spark_bucketing.set_properties(rels.tmp, props) -%}
  {%- endif -%}
  {%- do spark_bucketing.acquire_commit_lock(rels) -%}
  {#- The table as it is now: another run may have built, rebuilt or committed to it since this run looked. -#}
  {%- set current = spark_bucketing.listed_relation(rels.target) -%}
  {%- set current_info = spark_bucketing.table_info(current) if current is not none and current.is_table else none -%}
  {%- set conflict = spark_bucketing.whole_table_conflict(rels, old_relation, current, current_info, planned) -%}
  {%- if conflict -%}
    {#- discard's error releases the lock (release_held_lock). -#}
    {%- do spark_bucketing.discard(written, location, rels, conflict ~ ". This run published nothing and its files are deleted."
        ~ " Rerunning is safe: the rerun writes into the table as the other run left it") -%}
  {%- endif -%}
  {#- Only a lock holder re-declares: such entries of other runs are dead runs'. -#}
  {%- do spark_bucketing.drop_dead_runs_entries(rels, ['respec'], 0, rels.side_listing) -%}
  {%- do spark_bucketing.drop_dead_runs_entries(rels, ['tmp', 'scratch', 'incr', 'new'], none, rels.side_listing) -%}
  {%- do spark_bucketing.checkpoint('before_swap') -%}
  {%- do spark_bucketing.check_lock_held(rels) -%}
  {%- do spark_bucketing.swap_in(rels.tmp, current, rels) -%}
  {%- if current_info and current_info.type == 'external' and spark_bucketing.owns_location(current_info.location, owned) -%}
    {#- An external table's files outlive its DROP; the previous build's folder is ours to clear. -#}
    {%- do spark_bucketing.delete_locations([current_info.location], rels.scratch) -%}
  {%- endif -%}
  {%- do spark_bucketing.release_commit_lock(rels) -%}
{% endmacro %}

{% macro whole_table_conflict(rels, old_relation, current, current_info, planned) %}
  {#- Why a whole build must not swap in, or none (see replace_table). -#}
  {%- if old_relation is none and current is not none and spark_bucketing.is_bucketed_incremental(model.config) -%}
    {{ return("another run created " ~ rels.target ~ " while this run built it from scratch, from its own rows only") }}
  {%- endif -%}
  {%- if planned is not none -%}
    {%- set now = spark_bucketing.read_metadata(current, records=false) if current_info else none -%}
    {%- if now is none or now.commit != planned.commit or not spark_bucketing.same_location(current_info.location, planned.location) -%}
      {{ return("another run committed to " ~ rels.target ~ (" (commit " ~ now.commit ~ ")" if now else " (it is gone)")
          ~ " after this run read it (commit " ~ planned.commit ~ "), and this run's rewrite of the whole table made its rows from the rows as they were") }}
    {%- endif -%}
  {%- endif -%}
  {{ return(none) }}
{% endmacro %}
