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

{% macro batched_switch_sql(target, replaced) %}
  {#- The session extension's one statement for all the `replaced`
      partitions: one metastore call, applied in one transaction. It
      returns each partition's previous folder. -#}
  {%- set moves = [] -%}
  {%- for s in replaced -%}{%- do moves.append({'spec': s['values'], 'location': s.location}) -%}{%- endfor -%}
  {{ return(spark_bucketing.switch_statement() ~ ' ' ~ target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(moves))) }}
{% endmacro %}

{% macro switch_partitions(target, stats, catalog, batched=false) %}
  {#- Points the table's partitions at their new, verified folders: the
      replaced ones (with `batched`, through the extension's one statement),
      then the new ones, added 100 per statement. Returns, with `batched`,
      the folders the replaced partitions were in; else none. -#}
  {%- set replaced = stats | selectattr('path', 'in', catalog) | list -%}
  {%- set added = [] -%}
  {%- for s in stats | rejectattr('path', 'in', catalog) -%}{%- do added.append((s['values'], s.location)) -%}{%- endfor -%}
  {%- set statements = [] if batched else spark_bucketing.set_location_statements(target, replaced) -%}
  {%- do statements.extend(spark_bucketing.add_partition_statements(target, added)) -%}
  {%- set left = none -%}
  {%- if batched -%}
    {%- set left = run_query(spark_bucketing.batched_switch_sql(target, replaced)).columns[0].values() | list -%}
    {%- do spark_bucketing.checkpoint('mid_switch') -%}
  {%- endif -%}
  {%- for sql in statements -%}
    {%- call statement('spark_bucketing_switch_partition') -%}{{ sql }}{%- endcall -%}
    {%- if loop.first and not batched -%}{%- do spark_bucketing.checkpoint('mid_switch') -%}{%- endif -%}
  {%- endfor -%}
  {{ return(left) }}
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
