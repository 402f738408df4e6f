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
  {#- The statements that point the `replaced` partitions (stats) at their
      new folders. With the session extension loaded and on, one statement
      for all: one metastore call, which the metastore applies in one
      transaction. Without it, Spark SQL's one ALTER TABLE per partition
      (for one partition that is one call too, so the session is not asked). -#}
  {%- if not replaced -%}{{ return([]) }}{%- endif -%}
  {%- if replaced | length > 1 and spark_bucketing.extension_active() -%}
    {%- set moves = [] -%}
    {%- for s in replaced -%}{%- do moves.append({'spec': s['values'], 'location': s.location}) -%}{%- endfor -%}
    {{ return([spark_bucketing.switch_statement() ~ ' ' ~ target ~ ' locations ' ~ spark_bucketing.sql_string(tojson(moves))]) }}
  {%- endif -%}
  {%- set statements = [] -%}
  {%- for s in replaced -%}
    {%- do statements.append('alter table ' ~ target ~ ' ' ~ spark_bucketing.partition_clause(s['values'])
        ~ ' set location ' ~ spark_bucketing.sql_string(s.location)) -%}
  {%- endfor -%}
  {{ return(statements) }}
{% endmacro %}

{% macro switch_partitions(target, stats, catalog) %}
  {#- Points the table's partitions at their new, verified folders: the
      replaced ones (set_location_statements), then the new ones, added 100
      per statement. -#}
  {%- set statements = spark_bucketing.set_location_statements(target, stats | selectattr('path', 'in', catalog) | list) -%}
  {%- set added = [] -%}
  {%- for s in stats | rejectattr('path', 'in', catalog) -%}{%- do added.append((s['values'], s.location)) -%}{%- endfor -%}
  {%- do statements.extend(spark_bucketing.add_partition_statements(target, added)) -%}
  {%- for sql in statements -%}
    {%- call statement('spark_bucketing_switch_partition') -%}{{ sql }}{%- endcall -%}
    {%- if loop.first -%}{%- do spark_bucketing.checkpoint('mid_switch') -%}{%- endif -%}
  {%- endfor -%}
{% endmacro %}

{% macro drop_partitions(target, paths, catalog) %}
  {#- Drops the partitions at `paths` (keys of `catalog`), 100 per statement. -#}
  {%- for batch in paths | batch(100) -%}
    {%- call statement('spark_bucketing_drop_partition') -%}
      alter table {{ target }} drop if exists
      {%- for path in batch %} {{ spark_bucketing.partition_clause(catalog[path]) }}{{ ',' if not loop.last }}{% endfor %}
    {%- endcall -%}
  {%- endfor -%}
{% endmacro %}
