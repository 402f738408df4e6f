{#- A run's commit, under the table's commit lock (steps/lock.sql): the
    state it publishes into, read again where another run committed since
    this run read the table, and the check that no such commit touched the
    partitions whose old rows this run's rows were made from. -#}

{% macro replacement_scope(rels, spec, replaced_partitions, extension, listed, catalog=none) %}
  {#- What a write replaces, from the catalog: {'listed': the written
      partitions, {path: values}, 'catalog': the paths of the table's
      partitions (a set), 'emptied': {path: values} of replaced partitions
      (static partitions, a merge's scope) the new rows left empty,
      'batched': whether the switch goes through the session extension
      (`extension`: it is active; it reports the folders it replaces),
      'other': a files_sql of the replaced partitions whose folders are
      wanted (all of them, or with 'batched' the emptied ones), or none}.
      Nothing here takes a Jinja step per partition of the table: a table of
      10,000 partitions pays seconds for each. `catalog`: the table's
      partition paths where the run has them already (read with its commit
      lock's mark, mark_choosing), else listed here. -#}
  {%- set catalog = set(catalog) if catalog is not none else spark_bucketing.catalog_paths(rels.target) -%}
  {%- set to_replace = spark_bucketing.static_values(spec, replaced_partitions) -%}
  {%- set emptied = {} -%}
  {#- Only static partitions (and a merge's scope) are replaced without new
      rows: with none, the table's other partitions are not looked at. -#}
  {%- if to_replace -%}
    {%- for path, values in spark_bucketing.paths_values(catalog | reject('in', listed) | sort).items()
        if spark_bucketing.values_in(values, to_replace, spec.partition_by) -%}
      {%- do emptied.update({path: values}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set switched = catalog | select('in', listed) | sort -%}
  {%- set batched = switched | length > 0 and extension -%}
  {%- set old_values = (emptied.values() | list) + ([] if batched else spark_bucketing.paths_values(switched).values() | list) -%}
  {{ return({'listed': listed, 'catalog': catalog, 'emptied': emptied, 'batched': batched,
             'other': spark_bucketing.files_sql(rels.target, spec.partition_by, old_values) if old_values else none}) }}
{% endmacro %}

{% macro replaced_folders(scope, spec) %}
  {#- {path: stats} of the folders of the replaced partitions that
      replacement_scope wants listed (scope.other), one query. -#}
  {%- set out = {} -%}
  {%- if scope.other is not none -%}
    {%- for s in spark_bucketing.folder_stats(run_query(spark_bucketing.with_folders_sql(scope.other, spec.partition_by | length)), spec.partition_by) -%}
      {%- do out.update({s.path: s}) -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(out) }}
{% endmacro %}

{% macro commit_state(rels, info, meta, spec, plan, checked, extension) %}
  {#- The table as this run publishes into it, read under the commit lock:
      {'info', 'meta', 'scope', 'replaced', 'commit': this commit's number}.
      Where no run committed since this run read the table (the same commit
      number), what the run planned from (and a bucketed folder's scope,
      read now); else read again (the table's
      description, its metadata, the scope of the switch and the folders it
      replaces), and 'conflict': why the run must not publish (conflict), or none. -#}
  {#- Read with the lock's mark where the run holds the lock by it (mark_choosing). -#}
  {%- set fresh = spark_bucketing.read_metadata(rels.target, rels.pop('locked_properties', none), records=false) -%}
  {%- set catalog = rels.pop('locked_partitions', none) -%}
  {%- if fresh.adding -%}
    {#- A run died while its switch moved an append's files (after this run
        started): completed first; its records carry its commit, so the
        check below sees the partitions it touched. -#}
    {%- do spark_bucketing.finish_added_files(rels, fresh) -%}
    {%- set fresh = spark_bucketing.read_metadata(rels.target, records=false) -%}
  {%- endif -%}
  {%- if fresh.restoring -%}
    {%- do spark_bucketing.restore_dead_runs_bucket_specs(rels, info, fresh.restoring,
        catalog if catalog is not none else spark_bucketing.catalog_paths(rels.target)) -%}
  {%- endif -%}
  {%- if fresh.commit == meta.commit and checked.scope is not none -%}
    {{ return(spark_bucketing.unchanged_state(info, meta, checked.scope, checked.replaced)) }}
  {%- elif fresh.commit == meta.commit -%}
    {#- A bucketed folder's scope is read here, under the lock (verify_partitions). -#}
    {%- set scope = spark_bucketing.replacement_scope(rels, spec, plan.replaced_partitions, extension, checked.listed, catalog) -%}
    {{ return(spark_bucketing.unchanged_state(info, meta, scope, spark_bucketing.replaced_folders(scope, spec))) }}
  {%- endif -%}
  {%- set now_info = spark_bucketing.table_info(rels.target) -%}
  {%- set scope = spark_bucketing.replacement_scope(rels, spec, plan.replaced_partitions, extension, checked.listed, catalog) -%}
  {%- set conflict = spark_bucketing.conflict(rels, info, now_info, meta, fresh, plan, scope) -%}
  {%- do log("spark_bucketing: " ~ rels.target ~ ": " ~ (fresh.commit - meta.commit) ~ " commit(s) of other runs since this run read the table; its switch is planned on the table as they left it", info=true) -%}
  {{ return({'info': now_info, 'meta': fresh, 'scope': scope, 'replaced': {} if conflict else spark_bucketing.replaced_folders(scope, spec),
             'commit': fresh.commit + 1, 'conflict': conflict}) }}
{% endmacro %}

{% macro unchanged_state(info, meta, scope, replaced) %}
  {#- commit_state's answer where no run committed since this run read the table: what it planned from. -#}
  {{ return({'info': info, 'meta': meta, 'scope': scope, 'replaced': replaced, 'commit': meta.commit + 1, 'conflict': none}) }}
{% endmacro %}

{% macro conflict(rels, info, now_info, meta, fresh, plan, scope) %}
  {#- Why the run must not publish, or none: a commit since it read the
      table makes its rows wrong. The table was rebuilt into another folder
      (this run's folder went with the old one); or, for a run whose rows
      were made from partitions' old rows (append, merge), a partition it
      writes or empties was committed by another run since. An
      insert_overwrite's rows do not depend on the old ones: its switch is
      planned anew and it lands, the later commit's rows whole; nor do an
      append's whose rows were written alone (written_append_plan): their
      files join the partitions as they are now where they can
      (added_paths). -#}
  {%- if not spark_bucketing.same_location(now_info.location, info.location) -%}
    {{ return("another run rebuilt " ~ rels.target ~ " into " ~ now_info.location ~ " while this run wrote into " ~ info.location) }}
  {%- endif -%}
  {%- if plan.reads_old_rows and not plan.written -%}
    {%- set records = fresh.partitions if fresh.version != '2' else spark_bucketing.all_partition_records(rels.target) -%}
    {%- for path in (scope.listed.keys() | list) + (scope.emptied.keys() | list) -%}
      {%- set rec = records.get(path) -%}
      {%- if rec is not none and rec.get('commit', 0) > meta.commit -%}
        {{ return("another run committed partition " ~ path ~ " of " ~ rels.target ~ " (commit " ~ rec.commit ~ ", its files in "
            ~ rec.location ~ ") after this run read the table (commit " ~ meta.commit ~ "), and this run's "
            ~ plan.strategy ~ " made its rows from the partition's rows as they were before") }}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}
  {{ return(none) }}
{% endmacro %}

{% macro read_added_records(rels, spec, stats, plan, state) %}
  {#- Format 2 keeps the records in the partitions: those of the written
      partitions that take files beside their own (plan.added) are the
      planned ones (appends_in_place) where no run committed since, else
      read again under the commit lock into state.meta, where added_paths
      and the switch find them as they find format 1's. -#}
  {%- if state.meta.version != '2' or not plan.added -%}{{ return(none) }}{%- endif -%}
  {%- set touched = [] -%}
  {%- for s in stats if spark_bucketing.values_key(s['values'], spec.partition_by) in plan.added and s.path not in state.meta.partitions -%}
    {%- do touched.append(s['values']) -%}
  {%- endfor -%}
  {%- for path, listed in spark_bucketing.partition_records_of(rels.target, touched).items() if listed.record is not none -%}
    {%- do state.meta.partitions.update({path: listed.record}) -%}
  {%- endfor -%}
{% endmacro %}

{% macro added_paths(spec, stats, plan, state) %}
  {#- {'paths': the written partitions whose files are added beside the
      partition's own, 'conflict': why the run must not publish, or none},
      decided under the commit lock. Where the plan's rows were written
      alone (written_append_plan: only the new rows, as the table's
      buckets), each written partition is added to where the table lists it
      now with a record of this run's spec and room for one more file per
      bucket (another run's append since is no conflict: the files join
      those it left), or created where the table does not list it; any
      other is a conflict, the partition's old rows not in this run's
      files. Else the partitions of plan.added (appends_in_place) must
      still be listed and recorded (a commit of another run to one of them
      since is a conflict already: the plan reads old rows). -#}
  {%- set out = {'paths': [], 'conflict': none} -%}
  {%- set spec_rec = spark_bucketing.spec_record(spec) -%}
  {%- for s in stats -%}
    {%- set rec = state.meta.partitions.get(s.path) if s.path in state.scope.catalog else none -%}
    {%- if plan.written and s.path in state.scope.catalog -%}
      {%- if rec is none or not spark_bucketing.same_spec(rec, spec_rec) or rec.get('appended', 0) + 2 > spec.get('max_files_per_bucket', 1) -%}
        {%- set why = 'it has no record' if rec is none else ('its record is of another bucket spec' if not spark_bucketing.same_spec(rec, spec_rec)
            else 'it holds ' ~ (rec.get('appended', 0) + 1) ~ ' files per bucket of max_files_per_bucket ' ~ spec.get('max_files_per_bucket', 1)) -%}
        {%- do out.update({'conflict': "another run committed partition " ~ s.path ~ " since this run planned, and it cannot take one more"
            ~ " file per bucket from this append: " ~ why}) -%}
      {%- endif -%}
      {%- do out.paths.append(s.path) -%}
    {%- elif spark_bucketing.values_key(s['values'], spec.partition_by) in plan.added -%}
      {%- if rec is none -%}
        {%- do out.update({'conflict': "another run committed partition " ~ s.path ~ " since this run planned: it is no longer listed or recorded, and this append adds files to it"}) -%}
      {%- endif -%}
      {%- do out.paths.append(s.path) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}
