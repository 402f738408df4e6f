{#- The difference between two sets of columns (name -> Spark type). -#}

{% macro schema_changes(query_columns, table_columns) %}
  {#- The difference between the query's columns and the table's (name ->
      type, names compared case-insensitively): {'added': {query's name:
      type}, 'removed': {table's name: type}, 'changed': [{'column' (the
      table's name), 'old', 'new'}]}, or none when they agree. -#}
  {%- set query = {} -%}{%- for n, t in query_columns.items() -%}{%- do query.update({n | lower: (n, t | lower)}) -%}{%- endfor -%}
  {%- set table = {} -%}{%- for n, t in table_columns.items() -%}{%- do table.update({n | lower: (n, t | lower)}) -%}{%- endfor -%}
  {%- set out = {'added': {}, 'removed': {}, 'changed': []} -%}
  {%- for key, (name, type) in query.items() if key not in table -%}{%- do out.added.update({name: type}) -%}{%- endfor -%}
  {%- for key, (name, type) in table.items() -%}
    {%- if key not in query -%}
      {%- do out.removed.update({name: type}) -%}
    {%- elif query[key][1] != type -%}
      {%- do out.changed.append({'column': name, 'old': type, 'new': query[key][1]}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out if out.added or out.removed or out.changed else none) }}
{% endmacro %}
