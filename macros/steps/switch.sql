{#- Pointing a table's partitions at new folders, and dropping partitions.
    Each partition shows its old rows or its new ones at every moment. -#}

{% macro add_partition_statements(relation, entries) %}
  {#- ALTER TABLE .. ADD statements for [(values, location)], 100 partitions each. -#}
  {%- set statements = [] -%}
  {%- for batch in entries | batch(100) -%}
    {%- set clauses = [] -%}
    {%- for values, location in batch -%}
      {%- do clauses.append(spark_bucketing.partition_clause(values) ~ ' location ' ~ spark_bucketing.sql_string(location)) -%}
    {%- endfor -%}
    {%- do statements.append('alter table ' ~ relation ~ ' add ' ~ (clauses | join(' '))) -%}
  {%- endfor -%}
  {{ return(statements) }}
{% endmacro %}

{% macro switch_statement() %}
  {#- The extension's statement that moves many partitions in one metastore
      call; tied to SwitchStatement in scala/Contracts.scala. -#}
  {{ return('spark_bucketing switch partitions') }}
{% endmacro %}

{% macro set_location_statements(target, replaced, restore_from=none) %}
  {#- Spark SQL's statements that point the `replaced` partitions (stats) at
      their new folders: one ALTER TABLE per partition, each its own
      metastore call, each followed, with `restore_from` (an empty folder of
      the run's), by the LOAD DATA that writes its bucket spec back
      (bucket_specs.sql): a partition is without it for one statement. -#}
  {%- set statements = [] -%}
  {%- for s in replaced -%}
    {%- do statements.append('alter table ' ~ target ~ ' ' ~ spark_bucketing.partition_clause(s['values'])
        ~ ' set location ' ~ spark_bucketing.sql_string(s.location)) -%}
    {%- if restore_from -%}{%- do statements.append(spark_bucketing.restore_bucket_spec_sql(target, restore_from, s['values'])) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(statements) }}
{% endmacro %}

{% macro switch_partitions(target, stats, catalog, restore_from=none) %}
  {#- Points the table's partitions at their new, verified folders with
      Spark SQL's statements: the replaced ones one statement each (two with
      `restore_from`: set_location_statements), then the new ones, added 100
      per statement. (With the session extension, switch_in_one_statement.) -#}
  {%- set replaced = stats | selectattr('path', 'in', catalog) | list -%}
  {%- set added = [] -%}
  {%- for s in stats | rejectattr('path', 'in', catalog) -%}{%- do added.append((s['values'], s.location)) -%}{%- endfor -%}
  {%- set statements = spark_bucketing.set_location_statements(target, replaced, restore_from) -%}
  {%- do statements.extend(spark_bucketing.add_partition_statements(target, added)) -%}
  {%- for sql in statements -%}
    {%- call statement('spark_bucketing_switch_partition') -%}{{ sql }}{%- endcall -%}
    {%- if loop.first -%}{%- do spark_bucketing.checkpoint('mid_switch') -%}{%- endif -%}
  {%- endfor -%}
{% endmacro %}

{% macro switch_and_record_sql(target, moves, before, after, commit={}, unset_after=[], end=none, lock=none) %}
  {#- The extension's switch with format 1's records: the table properties
      `before` (and the commit number, `commit`) set first, then `moves`
      [{'spec', 'location', 'create', 'drop'}], then the properties `after`
      once every partition has moved
      (the tests' step 'inside_switch' stops it before those); then `end`
      (end_payload, with 'expect_left'), where given and the moved
      partitions left the folders it expects. `lock`: the statement takes
      the commit lock itself first (switch_with_own_lock). -#}
  {%- set payload = {'moves': moves, 'table_properties': spark_bucketing.unredacted(before), 'table_properties_after': spark_bucketing.unredacted(after),
                     'commit_properties': commit, 'table_properties_unset_after': unset_after,
                     'release_lock_on_failure': model.get('spark_bucketing_lock_entry')} -%}
  {%- if end is not none -%}{%- do payload.update({'end': end}) -%}{%- endif -%}
  {%- if lock is not none -%}{%- do payload.update({'lock': lock}) -%}{%- endif -%}
  {%- if spark_bucketing.injected_failure('inside_switch') -%}{%- do payload.update({'fail_after_moves': true}) -%}{%- endif -%}
  {{ return(spark_bucketing.switch_statement() ~ ' ' ~ target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(payload))) }}
{% endmacro %}

{% macro switch_in_one_statement(rels, stats, catalog, emptied, properties, added=[], end=none, lock=none) %}
  {#- Through the session extension, everything switch_partitions,
      set_properties and drop_partitions do, in one statement: the records
      of the partitions the run adds (a record of a partition not listed
      yet is read by nobody), the replaced partitions moved to their new
      folders (one metastore transaction), the new ones added, the
      `emptied` ({path: values}) dropped, then the rest of the table's
      `properties` (format 1's metadata): no partition is ever listed
      without a record, and none has a record of files it does not point
      at yet. The partitions of `added` (paths) keep their folder and take
      the written files into it, their records (in `properties`) set once
      the files are in; the payload of those moves is kept in the table's
      properties (adding_key of the run) until then, for the roll-forward
      of a run that dies in between (finish_added_files). `end`: the end of
      the commit (end_payload with 'expect_left': the folders the replaced
      partitions are expected in), run by the switch where they were in
      those. `lock`: the switch takes the commit lock itself
      (switch_with_own_lock). Returns {'left': the folders the replaced
      partitions were in, 'ended': whether the switch ended the commit and
      released its lock, 'declined': why the switch did not take the lock
      (nothing changed), or none}. -#}
  {%- set target = rels.target -%}
  {%- set moves = [] -%}
  {%- set before = {} -%}
  {%- set adds = {'moves': [], 'table_properties_after': {}} -%}
  {%- for s in stats -%}
    {%- set key = spark_bucketing.partition_key(s.path) -%}
    {%- if s.path in added -%}
      {%- do adds.moves.append({'spec': s['values'], 'add_files': s.location, 'expect_location': fromjson(properties[key]).location}) -%}
      {%- do adds.table_properties_after.update({key: properties[key]}) -%}
    {%- else -%}
      {%- do moves.append({'spec': s['values'], 'location': s.location, 'create': s.path not in catalog}) -%}
      {%- if s.path not in catalog and key in properties -%}{%- do before.update({key: properties[key]}) -%}{%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set pending = [spark_bucketing.adding_key(rels.run_id)] if adds.moves else [] -%}
  {%- if adds.moves -%}{%- do before.update({pending[0]: tojson(adds)}) -%}{%- endif -%}
  {%- for values in emptied.values() -%}{%- do moves.append({'spec': values, 'drop': true}) -%}{%- endfor -%}
  {#- The commit number goes before anything moves: a run that dies inside the switch has committed. -#}
  {%- set commit = dict(properties.items() | selectattr('0', 'equalto', spark_bucketing.commit_key())) -%}
  {%- set after = dict(properties.items() | rejectattr('0', 'in', before) | rejectattr('0', 'in', commit)) -%}
  {%- set result = run_query(spark_bucketing.switch_and_record_sql(target, adds.moves + moves, before, after, commit, pending, end, lock)) -%}
  {%- if lock is not none and result.rows | length == 1 and result.rows[0][4] is not none -%}
    {{ return({'declined': result.rows[0][4], 'ended': false, 'left': []}) }}
  {%- endif -%}
  {%- set ended = result.rows | length > 0 and result.rows[0][2] -%}
  {%- if ended -%}
    {%- do spark_bucketing.commit_ended(rels, result.columns[3].values() | reject('none') | list) -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint('mid_switch') -%}
  {#- The rows follow the moves (then come the end's); an emptied partition's folder is listed by the check. -#}
  {{ return({'declined': none, 'ended': ended, 'left': zip(adds.moves + moves, result.columns[0].values()) | rejectattr('0.create') | rejectattr('0.drop')
      | rejectattr('0.add_files') | map(attribute='1') | list}) }}
{% endmacro %}

{% macro finish_added_files(rels, meta) %}
  {#- Under the commit lock: completes the appends whose switch died while
      it moved their files into partitions' folders (meta.adding), each by
      its saved payload (the files still in the run's folder move, the
      records are set) and drops the entry. A live run's entry is gone by
      the time another holds the lock. -#}
  {%- for key, payload in meta.adding.items() -%}
    {%- set adds = fromjson(payload) -%}
    {%- do log("spark_bucketing: " ~ rels.target ~ ": completing the append of a run that died while it moved its files (" ~ key ~ ")", info=true) -%}
    {%- do run_query(spark_bucketing.switch_and_record_sql(rels.target, adds.moves, {}, adds.table_properties_after, {}, [key])) -%}
  {%- endfor -%}
{% endmacro %}

{% macro drop_partitions(target, partitions) %}
  {#- Drops `partitions` ({path: values}), 100 per statement. -#}
  {%- for batch in partitions.values() | batch(100) -%}
    {%- call statement('spark_bucketing_drop_partition') -%}
      alter table {{ target }} drop if exists
      {%- for values in batch %} {{ spark_bucketing.partition_clause(values) }}{{ ',' if not loop.last }}{% endfor %}
    {%- endcall -%}
  {%- endfor -%}
{% endmacro %}
