{#- Pointing a table's partitions at new folders, checking the switch, and
    dropping partitions. Each partition shows its old rows or its new ones
    at every moment. -#}

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

{% macro switch_partitions(target, stats, catalog) %}
  {#- Points the table's partitions at their new, verified folders. Spark SQL
      sets one partition's location per statement, so each replaced partition
      takes one; new partitions are added 100 per statement. -#}
  {%- set statements = [] -%}
  {%- for s in stats if s.path in catalog -%}
    {%- do statements.append('alter table ' ~ target ~ ' ' ~ spark_bucketing.partition_clause(s['values'])
        ~ ' set location ' ~ spark_bucketing.sql_string(s.location)) -%}
  {%- endfor -%}
  {%- set added = [] -%}
  {%- for s in stats | rejectattr('path', 'in', catalog) -%}{%- do added.append((s['values'], s.location)) -%}{%- endfor -%}
  {%- do statements.extend(spark_bucketing.add_partition_statements(target, added)) -%}
  {%- for sql in statements -%}
    {%- call statement('spark_bucketing_switch_partition') -%}{{ sql }}{%- endcall -%}
    {%- if loop.first -%}{%- do spark_bucketing.checkpoint('mid_switch') -%}{%- endif -%}
  {%- endfor -%}
{% endmacro %}

{% macro switch_back(target, s, catalog, replaced) %}
  {#- Returns one switched partition (`s`) to its previous folder, or drops
      it if the table did not list it. A partition that held no files before
      stays on the new folder: it has no old rows to return. -#}
  {%- if s.path in replaced -%}
    {%- call statement('spark_bucketing_switch_back') -%}
      alter table {{ target }} {{ spark_bucketing.partition_clause(s['values']) }} set location {{ spark_bucketing.sql_string(replaced[s.path].location) }}
    {%- endcall -%}
  {%- elif s.path not in catalog -%}
    {%- call statement('spark_bucketing_switch_back') -%}
      alter table {{ target }} drop if exists {{ spark_bucketing.partition_clause(s['values']) }}
    {%- endcall -%}
  {%- endif -%}
{% endmacro %}

{% macro verify_switch(rels, spec, stats, catalog, replaced) %}
  {#- Reads the switched partitions back through the table: each must show
      the folder, files and rows that were written. Otherwise the partitions
      that disagree are switched back and the run fails. -#}
  {%- set after = {} -%}
  {%- for s in spark_bucketing.partition_stats(rels.target, spec.partition_by, stats | map(attribute='values') | list) -%}
    {%- do after.update({s.path: s}) -%}
  {%- endfor -%}
  {%- set wrong = [] -%}
  {%- for s in stats -%}
    {%- set a = after.get(s.path) -%}
    {%- if a is none or not spark_bucketing.same_location(a.location, s.location) or a.rows != s.rows or a.files != s.files -%}
      {%- do wrong.append(s.path ~ ': wrote ' ~ s.rows ~ ' rows in ' ~ s.files ~ ' files at ' ~ s.location ~ ', the table shows '
          ~ ((a.rows ~ ' rows in ' ~ a.files ~ ' files at ' ~ a.location) if a is not none else 'no rows')) -%}
      {%- do spark_bucketing.switch_back(rels.target, s, catalog, replaced) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if wrong -%}
    {%- do spark_bucketing.model_error("after switching partitions to their new folders, "
        ~ (wrong | length) ~ " did not show the rows written; they were switched back to their previous folders:\n  " ~ (wrong | join('\n  '))) -%}
  {%- endif -%}
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
