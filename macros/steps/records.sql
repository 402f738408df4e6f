{#- The run's steps that store records in format 2 (catalog/partition_records.sql):
    each writes the records into the partitions through the extension's
    switch, and the summary into the table's properties. -#}

{% macro switch_with_records_sql(target, moves, table_properties) %}
  {#- The extension's switch of format 2: `moves` [{'spec', 'location',
      'record', 'create', 'drop'}] in one statement, `table_properties`
      set before any partition moves; the run's commit lock released if it
      fails. It returns each partition's previous folder and record. -#}
  {{ return(spark_bucketing.switch_statement() ~ ' ' ~ target ~ ' locations '
      ~ spark_bucketing.sql_string(tojson({'moves': moves, 'table_properties': spark_bucketing.unredacted(table_properties),
                                           'release_lock_on_failure': model.get('spark_bucketing_lock_entry')}))) }}
{% endmacro %}

{% macro record_moves(stats, records, catalog, added=[]) %}
  {#- Moves that point each partition of `stats` at its folder with its
      record (`records`: {path: record}), creating those `catalog` (a set of
      paths) does not list; those of `added` (paths) keep their folder (the
      one their record names: added_record keeps it) and take the written
      files into it. -#}
  {%- set moves = [] -%}
  {%- for s in stats -%}
    {%- if s.path in added -%}
      {%- do moves.append({'spec': s['values'], 'add_files': s.location, 'expect_location': records[s.path].location, 'record': tojson(records[s.path])}) -%}
    {%- else -%}
      {%- do moves.append({'spec': s['values'], 'location': s.location, 'record': tojson(records[s.path]), 'create': s.path not in catalog}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(moves) }}
{% endmacro %}

{% macro summary_properties(spec, counts, listed, commit=none) %}
  {#- Format 2's table properties after a write with `spec`: the format, the spec, the summary (and the commit number). -#}
  {%- set props = {spark_bucketing.metadata_prefix() ~ 'format_version': '2',
                   spark_bucketing.metadata_prefix() ~ 'spec': tojson(spark_bucketing.spec_record(spec)),
                   spark_bucketing.summary_key(): spark_bucketing.summary(counts, listed)} -%}
  {%- if commit is not none -%}{%- do props.update({spark_bucketing.commit_key(): commit | string}) -%}{%- endif -%}
  {{ return(props) }}
{% endmacro %}

{% macro record_only_moves(records) %}
  {#- Moves that give listed partitions their records ({path: record}), their folders unchanged. -#}
  {%- set values = spark_bucketing.paths_values(records.keys() | list) -%}
  {%- set moves = [] -%}
  {%- for path, rec in records.items() -%}{%- do moves.append({'spec': values[path], 'record': tojson(rec)}) -%}{%- endfor -%}
  {{ return(moves) }}
{% endmacro %}

{% macro format_2_switch(rels, moves, commit) %}
  {#- Sends format 2's switch of `moves` (record_moves) and returns its
      result. Only the summary is marked pending first: a table moving from
      format 1 stays in format 1, its records in its properties, until the
      summary is written. The commit number goes first too: a run that dies
      inside the switch has committed. Where partitions take added files,
      the payload of those moves is kept in the table's properties until
      their records are set (after the files moved), for the roll-forward of
      a run that dies in between (finish_added_files), as in format 1. -#}
  {%- set pending = {spark_bucketing.summary_key(): tojson({'pending': rels.run_id}), spark_bucketing.commit_key(): commit | string} -%}
  {%- set adds = moves | selectattr('add_files', 'defined') | list -%}
  {%- if not adds -%}
    {{ return(run_query(spark_bucketing.switch_with_records_sql(rels.target, moves, pending))) }}
  {%- endif -%}
  {%- set adding = spark_bucketing.adding_key(rels.run_id) -%}
  {%- do pending.update({adding: tojson({'moves': adds, 'table_properties_after': {}})}) -%}
  {{ return(run_query(spark_bucketing.switch_and_record_sql(rels.target, moves, pending, {}, {}, [adding]))) }}
{% endmacro %}

{% macro switch_and_record(rels, meta, spec, stats, scope, accounting, commit, added=[]) %}
  {#- Format 2's switch and record, in two statements: the extension's
      switch (the summary marked pending first, then the replaced
      partitions moved and the new ones added, each with its record, the
      emptied ones dropped; a table in format 1 also gets every other
      listed partition's record, from its properties), then the format,
      summary and spec in the table's properties (and format 1's record
      properties unset). The partitions of `added` (paths) take the
      written files into their own folders, their records (in `meta`, read
      under the commit lock) counting them (added_record).
      Returns {'left': the replaced partitions' previous folders, 'counts':
      the spec counts after the run, 'listed': the listed paths after it}. -#}
  {%- set before = spark_bucketing.records_to_move(rels.target, meta) if meta.version != '2' else none -%}
  {%- set counts = spark_bucketing.current_counts(rels.target, meta, scope.catalog, before) -%}
  {%- set records = spark_bucketing.stats_records(spec, stats, accounting, commit) -%}
  {%- for s in stats if s.path in added -%}
    {%- do records.update({s.path: spark_bucketing.added_record(spec, s, meta.partitions[s.path], commit)}) -%}
  {%- endfor -%}
  {%- set moves = spark_bucketing.record_moves(stats, records, scope.catalog, added) -%}
  {%- set replaced = stats | map(attribute='path') | select('in', scope.catalog) | list -%}
  {%- for values in scope.emptied.values() -%}{%- do moves.append({'spec': values, 'drop': true}) -%}{%- endfor -%}
  {%- if before is not none -%}
    {#- Moving from format 1: the records of the partitions this run leaves
        go into their partitions, their folders unchanged. -#}
    {%- set kept = before.items() | selectattr('0', 'in', scope.catalog) | rejectattr('0', 'in', records)
        | rejectattr('0', 'in', scope.emptied) | list -%}
    {%- do moves.extend(spark_bucketing.record_only_moves(dict(kept))) -%}
  {%- endif -%}
  {%- set result = spark_bucketing.format_2_switch(rels, moves, commit) -%}
  {%- do spark_bucketing.checkpoint('mid_switch') -%}
  {#- The switch's rows follow the moves: the written partitions (the
      replaced ones among them), then the dropped ones. -#}
  {%- set rows = zip(moves, result.columns[0].values(), result.columns[1].values()) | list -%}
  {%- set n = stats | length -%}
  {%- set written_rows = rows[:n] -%}
  {%- set left = written_rows | rejectattr('0.create') | rejectattr('0.add_files') | map(attribute='1') | list -%}
  {%- set removed_paths = replaced + (scope.emptied.keys() | list) -%}
  {%- if meta.version == '2' -%}
    {%- set removed_rows = (written_rows | rejectattr('0.create') | list) + rows[n:n + (scope.emptied | length)] -%}
    {%- set removed = spark_bucketing.parsed_records(rels.target, removed_paths, removed_rows | map(attribute='2') | list).values() | list -%}
  {%- else -%}
    {%- set removed = [] -%}
    {%- for path in removed_paths -%}{%- do removed.append(before.get(path)) -%}{%- endfor -%}
  {%- endif -%}
  {%- set counts = spark_bucketing.counted(counts, removed, records.values() | list) -%}
  {%- set listed = (scope.catalog | reject('in', scope.emptied) | list) + (stats | map(attribute='path') | reject('in', scope.catalog) | list) -%}
  {%- do spark_bucketing.set_properties(rels.target, spark_bucketing.summary_properties(spec, counts, listed, commit)) -%}
  {#- Format 1's record properties (left by an earlier move that failed after its summary, too). -#}
  {%- do spark_bucketing.unset_properties(rels.target, meta['keys'].values() | list) -%}
  {{ return({'left': left, 'counts': counts, 'listed': listed}) }}
{% endmacro %}

{% macro record_partitions(relation, spec, stats, accounting=none) %}
  {#- Format 2 for a table just built (its partitions `stats`, all listed):
      one statement writes every partition's record, the format, spec and
      summary. -#}
  {%- set records = spark_bucketing.stats_records(spec, stats, accounting) -%}
  {%- set moves = [] -%}
  {%- for s in stats -%}{%- do moves.append({'spec': s['values'], 'record': tojson(records[s.path])}) -%}{%- endfor -%}
  {%- set props = spark_bucketing.summary_properties(spec, spark_bucketing.spec_counts(records), records.keys() | list) -%}
  {%- do run_query(spark_bucketing.switch_with_records_sql(relation, moves, props)) -%}
{% endmacro %}

{% macro records_to_properties(relation, records) %}
  {#- Back to format 1 (bucket_records='table_properties' on a table in
      format 2): every partition's record into the table's properties, the
      summary unset. The partitions keep their parameters, which format 1
      does not read. -#}
  {%- set props = {spark_bucketing.metadata_prefix() ~ 'format_version': '1'} -%}
  {%- for path, rec in records.items() -%}{%- do props.update({spark_bucketing.partition_key(path): tojson(rec)}) -%}{%- endfor -%}
  {%- do spark_bucketing.set_properties(relation, props) -%}
  {%- do spark_bucketing.unset_properties(relation, [spark_bucketing.summary_key()]) -%}
{% endmacro %}
