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

{% macro set_location_statements(target, replaced) %}
  {#- Spark SQL's statements that point the `replaced` partitions (stats) at
      their new folders: one ALTER TABLE per partition, each its own
      metastore call. -#}
  {%- set statements = [] -%}
  {%- for s in replaced -%}
    {%- do statements.append('alter table ' ~ target ~ ' ' ~ spark_bucketing.partition_clause(s['values'])
        ~ ' set location ' ~ spark_bucketing.sql_string(s.location)) -%}
  {%- endfor -%}
  {{ return(statements) }}
{% endmacro %}

{% macro switch_partitions(target, stats, catalog) %}
  {#- Points the table's partitions at their new, verified folders with
      Spark SQL's statements: the replaced ones one statement each, then
      the new ones, added 100 per statement. (With the session extension,
      switch_in_one_statement.) -#}
  {%- set replaced = stats | selectattr('path', 'in', catalog) | list -%}
  {%- set added = [] -%}
  {%- for s in stats | rejectattr('path', 'in', catalog) -%}{%- do added.append((s['values'], s.location)) -%}{%- endfor -%}
  {%- set statements = spark_bucketing.set_location_statements(target, replaced) -%}
  {%- do statements.extend(spark_bucketing.add_partition_statements(target, added)) -%}
  {%- for sql in statements -%}
    {%- call statement('spark_bucketing_switch_partition') -%}{{ sql }}{%- endcall -%}
    {%- if loop.first -%}{%- do spark_bucketing.checkpoint('mid_switch') -%}{%- endif -%}
  {%- endfor -%}
{% endmacro %}

{% macro switch_and_record_sql(target, moves, before, after, commit={}) %}
  {#- The extension's switch with format 1's records: the table properties
      `before` (and the commit number, `commit`) set first, then `moves`
      [{'spec', 'location', 'create', 'drop'}], then the properties `after`
      once every partition has moved
      (the tests' step 'inside_switch' stops it before those). -#}
  {%- set payload = {'moves': moves, 'table_properties': spark_bucketing.unredacted(before), 'table_properties_after': spark_bucketing.unredacted(after),
                     'commit_properties': commit,
                     'release_lock_on_failure': model.get('spark_bucketing_lock_entry')} -%}
  {%- if spark_bucketing.injected_failure('inside_switch') -%}{%- do payload.update({'fail_after_moves': true}) -%}{%- endif -%}
  {{ return(spark_bucketing.switch_statement() ~ ' ' ~ target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(payload))) }}
{% endmacro %}

{% macro switch_in_one_statement(target, stats, catalog, emptied, properties) %}
  {#- Through the session extension, everything switch_partitions,
      set_properties and drop_partitions do, in one statement: the records
      of the partitions the run adds (a record of a partition not listed
      yet is read by nobody), the replaced partitions moved to their new
      folders (one metastore transaction), the new ones added, the
      `emptied` ({path: values}) dropped, then the rest of the table's
      `properties` (format 1's metadata): no partition is ever listed
      without a record, and none has a record of files it does not point
      at yet. Returns the folders the replaced partitions were in. -#}
  {%- set moves = [] -%}
  {%- set before = {} -%}
  {%- for s in stats -%}
    {%- do moves.append({'spec': s['values'], 'location': s.location, 'create': s.path not in catalog}) -%}
    {%- set key = spark_bucketing.partition_key(s.path) -%}
    {%- if s.path not in catalog and key in properties -%}{%- do before.update({key: properties[key]}) -%}{%- endif -%}
  {%- endfor -%}
  {%- for values in emptied.values() -%}{%- do moves.append({'spec': values, 'drop': true}) -%}{%- endfor -%}
  {#- The commit number goes before anything moves: a run that dies inside the switch has committed. -#}
  {%- set commit = dict(properties.items() | selectattr('0', 'equalto', spark_bucketing.commit_key())) -%}
  {%- set after = dict(properties.items() | rejectattr('0', 'in', before) | rejectattr('0', 'in', commit)) -%}
  {%- set result = run_query(spark_bucketing.switch_and_record_sql(target, moves, before, after, commit)) -%}
  {%- do spark_bucketing.checkpoint('mid_switch') -%}
  {#- The rows follow the moves; an emptied partition's folder is listed by the check. -#}
  {{ return(zip(moves, result.columns[0].values()) | rejectattr('0.create') | rejectattr('0.drop') | map(attribute='1') | list) }}
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
