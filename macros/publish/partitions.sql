{#- Publishing partitions into an existing table: write them under the
    table's folder in _bucketing/<run> (write_partitions), verify them,
    switch the table's partitions to them and record them, then declare the
    spec the partitions agree on. Reads only the partitions it writes. -#}

{% macro write_partitions(rels, spec, columns, plan, location, extension) %}
  {#- Writes the plan's rows under `location`: into a bucketed folder with
      no catalog entry where the session extension can (writes_folders,
      write_bucketed_folder), else through the side table rels.incr.
      Returns what was written: {'relation': the side table or none,
      'folder': the folder's description or none, and with a folder
      'check': its check's rows, run by the same statement}. -#}
  {%- if spark_bucketing.writes_folders(spec, extension) -%}
    {%- set check = spark_bucketing.folder_check_sql(spec, columns, location) -%}
    {{ return(spark_bucketing.write_bucketed_folder(spec, columns, plan.content, location, plan.bucketed_rows, check)) }}
  {%- endif -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.incr, spec, columns, plan.content, location, plan.bucketed_rows) -%}
  {{ return({'relation': rels.incr, 'folder': none}) }}
{% endmacro %}

{% macro verify_partitions(rels, spec, location, written, plan, extension) %}
  {#- Every check of the written partitions before anything is published,
      and what they replace: {'stats': the written partitions, 'listed':
      {path: values} of them, 'scope': replacement_scope, 'replaced':
      {path: stats of the folder it replaces}}. A side table's partitions
      come from its catalog, and the replaced partitions' folders are
      listed by the check's query. A bucketed folder's partitions are those
      the check finds (its listing and footers, no Spark job); its scope
      and replaced folders are none: read under the commit lock
      (commit_state), where the lock's first statement lists the table's
      partitions. -#}
  {%- if written.folder is not none -%}
    {%- set checked = plan.checked or spark_bucketing.verify_write(written, spec, location, rels) -%}
    {%- set listed = {} -%}
    {%- for s in checked.stats -%}{%- do listed.update({s.path: s['values']}) -%}{%- endfor -%}
    {%- do spark_bucketing.check_side_partitions(written, rels, location, checked.stats, none) -%}
    {%- set out = {'stats': checked.stats, 'listed': listed, 'scope': none, 'replaced': none} -%}
  {%- else -%}
    {%- set scope = spark_bucketing.replacement_scope(rels, spec, plan.replaced_partitions, extension, spark_bucketing.catalog_partitions(written.relation)) -%}
    {%- set checked = spark_bucketing.verify_write(written, spec, location, rels, scope.other) -%}
    {%- do spark_bucketing.check_side_partitions(written, rels, location, checked.stats, scope.listed) -%}
    {%- set replaced = {} -%}
    {%- for s in checked.other -%}{%- do replaced.update({s.path: s}) -%}{%- endfor -%}
    {%- set out = {'stats': checked.stats, 'listed': scope.listed, 'scope': scope, 'replaced': replaced} -%}
  {%- endif -%}
  {%- if plan.accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(written, location, rels, spec.partition_by, checked.stats, plan.accounting) -%}
  {%- endif -%}
  {{ return(out) }}
{% endmacro %}

{% macro undeclare_other_spec(rels, info, spec) %}
  {#- Never lets the catalog declare a spec the new partitions would break:
      a table declaring another spec is declared unbucketed first. Returns
      the spec the table declares now (a record or none). -#}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- if spark_bucketing.declares_other_spec(declared, spec) -%}
    {%- do spark_bucketing.redeclare(rels, rels.target, none, spec) -%}
    {{ return(none) }}
  {%- endif -%}
  {{ return(declared) }}
{% endmacro %}

{% macro declares_other_spec(declared, spec) %}
  {#- Whether the catalog's `declared` spec (a record or none) is another than `spec`. -#}
  {{ return(declared is not none and not spark_bucketing.same_spec(declared, spark_bucketing.spec_record(spec))) }}
{% endmacro %}

{% macro published_state(meta, scope, stats, written_props, declared) %}
  {#- What converge needs after a publish: {'records': {path: record or none}
      of every listed partition, 'unlisted_keys': metadata keys of partitions
      no longer listed, 'declared': the declared spec, 'written': paths
      written}. Built by filters, not a Jinja step per partition. -#}
  {%- set records = dict(meta.partitions.items() | selectattr('0', 'in', scope.catalog) | rejectattr('0', 'in', scope.emptied)) -%}
  {%- set unlisted_keys = meta['keys'].items() | rejectattr('0', 'in', records) | map(attribute='1') | list -%}
  {%- set unrecorded = scope.catalog | reject('in', records) | reject('in', scope.emptied) | sort -%}
  {%- do records.update(zip(unrecorded, [none] * (unrecorded | length))) -%}
  {%- for s in stats -%}{%- do records.update({s.path: fromjson(written_props[spark_bucketing.partition_key(s.path)])}) -%}{%- endfor -%}
  {{ return({'records': records, 'unlisted_keys': unlisted_keys | reject('in', written_props) | list,
             'declared': declared, 'written': stats | map(attribute='path') | list}) }}
{% endmacro %}

{% macro equal_spec_fields(records) %}
  {#- Whether all `records` hold the same hash, buckets, clustered_by and
      sorted_by, compared by filters: on a table of 10,000 partitions that
      agree (the common case) a Jinja step per record costs most of a second. -#}
  {%- for field in ['hash', 'buckets'] -%}
    {%- if records | map(attribute=field, default='(missing)') | unique(case_sensitive=true) | list | length > 1 -%}{{ return(false) }}{%- endif -%}
  {%- endfor -%}
  {#- Column lists by their repr: one string per list, distinct for distinct lists of names. -#}
  {%- for field in ['clustered_by', 'sorted_by'] -%}
    {%- if records | map(attribute=field, default='(missing)') | map('string') | unique(case_sensitive=true) | list | length > 1 -%}{{ return(false) }}{%- endif -%}
  {%- endfor -%}
  {{ return(true) }}
{% endmacro %}

{% macro converge(rels, spec, published) %}
  {#- Drops the records of partitions the catalog no longer lists, and
      declares the bucket spec every listed partition's record agrees on, or
      none while they differ (or one has no record). Decided from the
      metadata and the catalog's list; only a change to a bucketed
      declaration reads the other partitions (verified_spec). -#}
  {%- do spark_bucketing.unset_properties(rels.target, published.unlisted_keys) -%}
  {%- set common = spark_bucketing.converged_spec(spec, published) -%}
  {%- set declared = published.declared -%}
  {%- if not spark_bucketing.same_spec(published.declared, common) -%}
    {%- set stats = none if common is none else spark_bucketing.partition_stats(rels.target, spec.partition_by) -%}
    {%- set declared = common if common is none else spark_bucketing.verified_spec(rels.target, stats, common, published) -%}
    {%- if not spark_bucketing.same_spec(published.declared, declared) -%}
      {%- do spark_bucketing.redeclare(rels, rels.target, declared, spec, stats) -%}
    {%- endif -%}
  {%- endif -%}
  {%- if declared is none -%}{%- do spark_bucketing.warn_declared_unbucketed(rels, spec) -%}{%- endif -%}
{% endmacro %}

{% macro warn_declared_unbucketed(rels, spec) %}
  {#- A run that leaves its table declared unbucketed says so, with what repairs it: a table that reads
      unbucketed everywhere but through the session extension is not what a user who set buckets expects. -#}
  {%- do exceptions.warn("spark_bucketing: model '" ~ model.unique_id ~ "': " ~ rels.target ~ " is declared unbucketed:"
      ~ " its partitions do not all hold one bucket spec (on_bucket_change='evolve' keeps the old partitions as they were),"
      ~ " so Spark without the session extension, Hive and Trino read it unbucketed and its joins and aggregations on "
      ~ (spec.clustered_by | join(', ')) ~ " shuffle. Fix: rewrite every partition with " ~ spark_bucketing.describe_spec(spark_bucketing.spec_record(spec))
      ~ " once: `dbt run --select " ~ model.name ~ " --full-refresh`, or one run with on_bucket_change='rebuild'") -%}
{% endmacro %}

{% macro converged_spec(spec, published) %}
  {#- The bucket spec every listed partition's record agrees on after a
      publish (published_state), or none while they differ (or one has no
      record). -#}
  {%- if published.records is none -%}
    {#- Format 2: the spec counts decided it. -#}
    {%- set common = namespace(spec=published.common) -%}
  {%- else -%}
    {%- set records = published.records.values() | list -%}
    {%- set common = namespace(spec=spark_bucketing.spec_record(spec) if records | length == 0 else records[0]) -%}
    {%- if none in records or not spark_bucketing.equal_spec_fields(records) -%}
      {%- for rec in records if common.spec is not none -%}
        {#- Equal fields are the same spec: same_spec (a macro call) only for the rest. -#}
        {%- if rec is none or not (rec.hash == common.spec.hash and rec.buckets == common.spec.buckets
            and rec.clustered_by == common.spec.clustered_by and rec.sorted_by == common.spec.sorted_by
            or spark_bucketing.same_spec(rec, common.spec)) -%}{%- set common.spec = none -%}{%- endif -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
  {{ return(common.spec) }}
{% endmacro %}

{% macro added_records(spec, stats, added, meta, commit) %}
  {#- {property key: record} of the partitions of `added` (paths) after the
      files of `stats` are added to them (added_record), format 1's. -#}
  {%- set out = {} -%}
  {%- for s in stats if s.path in added -%}
    {%- do out.update({spark_bucketing.partition_key(s.path): tojson(spark_bucketing.added_record(spec, s, meta.partitions[s.path], commit))}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro event_time_at_or_before(bound, start) %}
  {#- Whether a record's event_time_before `bound` (none: not known) is at
      or before `start` (both as dbt gives a batch's bounds, ISO text). -#}
  {%- if bound is none -%}{{ return(false) }}{%- endif -%}
  {{ return(modules.datetime.datetime.fromisoformat(bound) <= modules.datetime.datetime.fromisoformat(start)) }}
{% endmacro %}

{% macro event_time_bounds(plan, stats, meta, state, props) %}
  {#- Format 1's records of the written partitions (`props`, as property
      JSON) with event_time_before: a bound the event times of all of a
      partition's rows are before, which lets a later microbatch batch add
      its files to the partition instead of rewriting it
      (appends_in_place). A batch sets the end of its range where the
      partition's other rows are bounded too (it took the batch's files
      beside its own, it is new, or its record had a bound: the later of
      the two); a compaction keeps the bound (its rows do not change); any
      other write drops it (its rows' event times are not known). -#}
  {%- for s in stats if plan.strategy in ('microbatch', 'compaction') or s.path in state.added -%}
    {%- set bound = (meta.partitions.get(s.path) or {}).get('event_time_before') -%}
    {%- if plan.strategy == 'microbatch' and (bound is not none or s.path not in state.scope.catalog) -%}
      {%- set bound = plan.event_time_before
          if bound is none or spark_bucketing.event_time_at_or_before(bound, plan.event_time_before) else bound -%}
    {%- elif plan.strategy != 'compaction' -%}
      {%- set bound = none -%}
    {%- endif -%}
    {%- do spark_bucketing.set_event_time_before(props, s.path, bound) -%}
  {%- endfor -%}
{% endmacro %}

{% macro set_event_time_before(props, path, bound) %}
  {#- The record of partition `path` in `props` with event_time_before `bound` (none: without one). -#}
  {%- set key = spark_bucketing.partition_key(path) -%}
  {%- set rec = fromjson(props[key]) -%}
  {%- do rec.pop('event_time_before', none) -%}
  {%- if bound is not none -%}{%- do rec.update({'event_time_before': bound}) -%}{%- endif -%}
  {%- do props.update({key: tojson(rec)}) -%}
{% endmacro %}

{% macro switch_format_1(rels, meta, checked, state, plan, spec, extension, written, location, lock=none) %}
  {#- Format 1's switch and records; returns {'left': the folders the
      switch moved partitions from (with the extension), 'published':
      published_state, 'ended': whether the switch ended the commit too
      (folded_end), 'declined': why a switch that takes the lock itself
      (`lock`: switch_with_own_lock) did not, or none}. -#}
  {%- if meta.version == '2' -%}
    {#- Back to format 1: every record into the table's properties first. -#}
    {%- set meta = spark_bucketing.read_metadata(rels.target) -%}
    {%- do spark_bucketing.records_to_properties(rels.target, meta.partitions) -%}
  {%- endif -%}
  {%- set written_props = spark_bucketing.metadata_properties(spec, checked.stats, plan.accounting, state.commit) -%}
  {%- do written_props.update(spark_bucketing.added_records(spec, checked.stats, state.added, meta, state.commit)) -%}
  {%- do spark_bucketing.event_time_bounds(plan, checked.stats, meta, state, written_props) -%}
  {%- set published = spark_bucketing.published_state(meta, state.scope, checked.stats, written_props, state.declared) -%}
  {%- if extension -%}
    {%- set end = spark_bucketing.folded_end(rels, spec, plan, meta, state, checked, written, location, published) -%}
    {%- set switched = spark_bucketing.switch_in_one_statement(rels, checked.stats, state.scope.catalog, state.scope.emptied, written_props,
        state.added, end, lock) -%}
    {{ return({'left': switched.left, 'published': published, 'ended': switched.ended, 'declined': switched.declined}) }}
  {%- endif -%}
  {#- SET LOCATION drops a replaced partition's bucket spec in the metastore: written back right after (bucket_specs.sql). -#}
  {%- set restored = {} -%}
  {%- if spark_bucketing.restores_bucket_specs(state.declared) -%}
    {%- for s in checked.stats if s.path in state.scope.catalog -%}{%- do restored.update({s.path: s['values']}) -%}{%- endfor -%}
  {%- endif -%}
  {%- set restore_from = spark_bucketing.empty_folder(rels, state.info.location) if restored else none -%}
  {%- if restored -%}{%- do spark_bucketing.mark_bucket_specs_restoring(rels, restored) -%}{%- endif -%}
  {%- do spark_bucketing.switch_partitions(rels.target, checked.stats, state.scope.catalog, restore_from) -%}
  {%- do spark_bucketing.set_properties(rels.target, written_props) -%}
  {%- do spark_bucketing.drop_partitions(rels.target, state.scope.emptied) -%}
  {{ return({'left': [], 'published': published, 'ended': false, 'declined': none,
             'restoring': [spark_bucketing.restoring_key(rels.run_id)] if restored else []}) }}
{% endmacro %}

{% macro folded_end(rels, spec, plan, meta, state, checked, written, location, published) %}
  {#- The end of the commit (commit_end) as the extension's switch runs it
      itself (switch_in_one_statement's `end`): one round trip fewer. Planned
      from the folders the replaced partitions are recorded in
      ('expect_left'; the switch runs it only where they were in those).
      None where a step comes between the switch and the end: a side table
      dropped, a spec declared (converge; the records of unlisted
      partitions go with the end), the tests' step 'mid_switch'. -#}
  {%- if written.relation is not none or (plan.staged is not none and plan.staged.relation is not none)
      or spark_bucketing.injected_failure('mid_switch')
      or not spark_bucketing.same_spec(published.declared, spark_bucketing.converged_spec(spec, published)) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set left = [] -%}
  {%- for s in checked.stats if s.path in state.scope.catalog and s.path not in state.added -%}
    {%- do left.append((meta.partitions.get(s.path) or {}).get('location')) -%}
  {%- endfor -%}
  {%- if none in left -%}{{ return(none) }}{%- endif -%}
  {%- set end = spark_bucketing.commit_end(plan, state, checked, location, left) -%}
  {%- set payload = spark_bucketing.end_payload(end.keep, end.delete, end.set, end.unset + published.unlisted_keys) -%}
  {%- do payload.update({'expect_left': left, 'fail_before_end': spark_bucketing.injected_failure('before_cleanup')}) -%}
  {{ return(payload) }}
{% endmacro %}

{% macro commit_end(plan, state, checked, location, left) %}
  {#- What the end of a partitions' commit writes and deletes, given the
      folders the switch moved replaced partitions from (`left`):
      {'keep': the replaced folders in their retention, 'delete': the
      folders due (retirement), the run's own emptied ones, its staged
      rows', 'set', 'unset': retirement's properties}. -#}
  {%- set replaced = [] -%}
  {%- for folder in (left or []) + (state.replaced.values() | map(attribute='location') | list)
      if folder and spark_bucketing.is_under(folder, state.info.location) -%}
    {%- do replaced.append(folder) -%}
  {%- endfor -%}
  {#- The folders an append's files were moved out of are empty (and the
      run's folder, where all of them were). -#}
  {%- set moved_out = checked.stats | selectattr('path', 'in', state.added) | map(attribute='location') | list -%}
  {%- set retired = spark_bucketing.retirement(state.meta, replaced) -%}
  {%- set due = retired.due + ([location] if moved_out and moved_out | length == checked.stats | length else moved_out) -%}
  {%- if plan.staged is not none -%}{%- set due = due + [plan.stage_location] -%}{%- endif -%}
  {{ return({'keep': (state.meta.replaced.values() | map(attribute='folder') | list) + replaced, 'delete': due,
             'set': retired.set, 'unset': retired.unset}) }}
{% endmacro %}

{% macro retirement(meta, replaced) %}
  {#- The folders this run's switch `replaced` are kept for
      replaced_folders_retention seconds, recorded in the table's properties
      (replaced_key), since a query that listed them before the switch may
      still read them. Returns {'set': the properties that keep them,
      'unset': the keys of the folders kept past their retention, 'due':
      the folders to delete now: those, and with a retention of 0 the
      replaced ones}, which the end of the commit writes and deletes under
      the commit lock (finish_publish). No partition points at any of them:
      a switch only ever points partitions at its own run's folders. -#}
  {%- set retention = spark_bucketing.replaced_folders_retention() -%}
  {%- set now = spark_bucketing.epoch_now() -%}
  {%- set expired = meta.replaced.items() | selectattr('1.replaced_at', 'le', now - retention) | list -%}
  {%- set kept = {} -%}
  {%- for folder in replaced if retention > 0 -%}
    {%- do kept.update({spark_bucketing.replaced_key(folder): tojson({'folder': folder, 'replaced_at': now})}) -%}
  {%- endfor -%}
  {{ return({'set': kept, 'unset': expired | map(attribute='0') | list,
             'due': (replaced if retention == 0 else []) + (expired | map(attribute='1.folder') | list)}) }}
{% endmacro %}

{% macro publish_partitions(rels, info, meta, spec, columns, plan, extension) %}
  {#- `plan`: a strategy's plan (strategies/); `extension`: whether the
      session extension is active (extension_active). The write and its
      check run beside other runs; the switch and the declared spec under
      the table's commit lock (switch_with_own_lock, else
      switch_under_lock). Deletes what the run leaves behind and releases
      the lock (finish_publish). -#}
  {#- A plan may hold its rows written already (written_append_plan). -#}
  {%- set location = plan.location or info.location.rstrip('/') ~ '/_bucketing/' ~ rels.run_id -%}
  {%- set written = plan.written or spark_bucketing.write_partitions(rels, spec, columns, plan, location, extension) -%}
  {#- A write discarded (discard) deletes the run's staged rows with it. -#}
  {%- set written = dict(written, staged=plan.staged, stage_location=plan.stage_location) -%}
  {%- set checked = spark_bucketing.verify_partitions(rels, spec, location, written, plan, extension) -%}
  {%- do spark_bucketing.checkpoint('after_write') -%}
  {%- set switched = spark_bucketing.switch_with_own_lock(rels, info, meta, spec, plan, checked, written, location, extension)
      or spark_bucketing.switch_under_lock(rels, info, meta, spec, plan, checked, written, location, extension) -%}
  {%- if switched.ended -%}
    {#- The switch ended the commit only where converge would declare nothing new (folded_end). -#}
    {%- if switched.published.declared is none -%}{%- do spark_bucketing.warn_declared_unbucketed(rels, spec) -%}{%- endif -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if written.relation is not none -%}{%- do adapter.drop_relation(written.relation) -%}{%- endif -%}
  {%- do spark_bucketing.checkpoint('before_cleanup') -%}
  {%- do spark_bucketing.converge(rels, spec, switched.published) -%}
  {%- set end = spark_bucketing.commit_end(plan, switched.state, checked, location, switched.left) -%}
  {%- do end.update({'unset': end.unset + switched.get('restoring', [])}) -%}
  {%- do spark_bucketing.finish_publish(rels, plan, end, extension) -%}
{% endmacro %}

{% macro switch_under_lock(rels, info, meta, spec, plan, checked, written, location, extension) %}
  {#- Takes the table's commit lock (acquire_commit_lock), plans on the
      table as the runs before this one left it (commit_state; a conflict
      discards the run's files and fails), and switches the written
      partitions in with their records. Returns {'state': commit_state's,
      with 'added' and 'declared', 'left': the folders the switch moved
      partitions from, 'published': published_state, 'ended': whether the
      switch ended the commit too}. -#}
  {%- do spark_bucketing.acquire_commit_lock(rels) -%}
  {%- do spark_bucketing.drop_dead_runs_entries(rels, none, none, rels.side_listing) -%}
  {%- set state = spark_bucketing.commit_state(rels, info, meta, spec, plan, checked, extension) -%}
  {%- do spark_bucketing.read_added_records(rels, spec, checked.stats, plan, state) -%}
  {%- set added = spark_bucketing.added_paths(spec, checked.stats, plan, state) -%}
  {%- if state.conflict or added.conflict -%}
    {#- discard's error releases the lock (release_held_lock). -#}
    {%- do spark_bucketing.discard(written, location, rels, (state.conflict or added.conflict) ~ ". This run published nothing and its files are deleted;"
        ~ " the table holds the other run's rows whole. Rerunning is safe: the rerun starts from them.") -%}
  {%- endif -%}
  {%- do state.update({'added': added.paths}) -%}
  {%- do state.update({'declared': spark_bucketing.undeclare_other_spec(rels, state.info, spec)}) -%}
  {%- do spark_bucketing.checkpoint('before_switch') -%}
  {%- do spark_bucketing.check_lock_held(rels) -%}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- set switched = spark_bucketing.switch_and_record(rels, state.meta, spec, checked.stats, state.scope, plan.accounting, state.commit, state.added) -%}
    {{ return({'state': state, 'left': switched.left, 'ended': false,
               'published': {'records': none, 'common': spark_bucketing.common_spec(switched.counts) if switched.counts else spark_bucketing.spec_record(spec),
                             'unlisted_keys': [], 'declared': state.declared, 'written': checked.stats | map(attribute='path') | list}}) }}
  {%- endif -%}
  {%- set switched = spark_bucketing.switch_format_1(rels, state.meta, checked, state, plan, spec, extension, written, location) -%}
  {%- do switched.update({'state': state}) -%}
  {{ return(switched) }}
{% endmacro %}

{% macro switch_with_own_lock(rels, info, meta, spec, plan, checked, written, location, extension) %}
  {#- A run whose partitions were written into a bucketed folder of its
      own (the session extension) of a format-1 table switches in one
      statement that takes the commit lock itself (OwnLock in the
      extension): take_ticket's mark, and the switch only where the mark's
      listing shows no other entry beside the table and the table is as
      this run read it (its folder, its commit number, no append pending,
      its partitions those recorded). One round trip instead of the mark's
      and the switch's. Planned as commit_state plans where no run
      committed since. Returns what switch_under_lock returns, or none,
      nothing changed: not tried (a side table, format 2, an append
      pending or a dead run's bucket specs to write back, a declared spec
      to undo, replaced folders to list first),
      or declined (another run about, or the table changed since this run
      read it); the run then takes the lock as every run does. -#}
  {%- if not (extension and written.folder is not none and (meta.version or '1') == '1' and spark_bucketing.records_format(spec) == '1')
      or meta.adding or meta.restoring -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- if spark_bucketing.declares_other_spec(declared, spec) -%}{{ return(none) }}{%- endif -%}
  {%- set recorded = meta.partitions.keys() | list -%}
  {%- set scope = spark_bucketing.replacement_scope(rels, spec, plan.replaced_partitions, extension, checked.listed, recorded) -%}
  {%- set state = spark_bucketing.unchanged_state(info, meta, scope, {}) -%}
  {%- do state.update({'declared': declared}) -%}
  {%- set added = spark_bucketing.added_paths(spec, checked.stats, plan, state) -%}
  {%- if scope.other is not none or added.conflict -%}{{ return(none) }}{%- endif -%}
  {%- do state.update({'added': added.paths}) -%}
  {%- do spark_bucketing.checkpoint('before_switch') -%}
  {%- set mark = spark_bucketing.choosing_mark(rels) -%}
  {%- set lock = {'mark': mark, 'location': info.location, 'commit_key': spark_bucketing.commit_key(), 'commit': meta.commit,
                  'pending_prefixes': [spark_bucketing.adding_key(''), spark_bucketing.restoring_key('')], 'partitions_md5': local_md5(recorded | sort(case_sensitive=true) | join('\n'))} -%}
  {%- do spark_bucketing.hold_commit_lock(rels, mark) -%}
  {%- set switched = spark_bucketing.switch_format_1(rels, meta, checked, state, plan, spec, extension, written, location, lock) -%}
  {%- if switched.declined -%}
    {%- do log("spark_bucketing: " ~ rels.target ~ ": its switch did not take the commit lock itself (" ~ switched.declined ~ "); taking it as every run does") -%}
    {%- do spark_bucketing.forget_commit_lock(rels) -%}
    {{ return(none) }}
  {%- endif -%}
  {%- do switched.update({'state': state}) -%}
  {{ return(switched) }}
{% endmacro %}

{% macro finish_publish(rels, plan, end, extension) %}
  {#- The end of a partitions' publish (`end`: commit_end): the replaced
      folders' properties written and the folders due deleted, the staged
      rows' side table dropped, the commit lock released. With the session
      extension one statement (end_commit) does it all and deletes dead
      runs' folders (but those `end.keep` holds); without, the properties
      are written, the lock released, then the folders go through the
      scratch table. -#}
  {%- if plan.staged is not none and plan.staged.relation is not none -%}{%- do adapter.drop_relation(plan.staged.relation) -%}{%- endif -%}
  {%- if extension -%}
    {%- do spark_bucketing.end_commit(rels, end.keep, end.delete, end.set, end.unset) -%}
  {%- else -%}
    {%- do spark_bucketing.set_properties(rels.target, end.set) -%}
    {%- do spark_bucketing.unset_properties(rels.target, end.unset) -%}
    {%- do spark_bucketing.release_commit_lock(rels) -%}
    {%- do spark_bucketing.delete_locations(end.delete, rels.scratch) -%}
  {%- endif -%}
{% endmacro %}
