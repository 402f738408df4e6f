{#- Quoting and escaping: the package's one identifier quoter and its one
    string-literal escaper. -#}

{% macro quoted(columns) %}
  {%- set out = [] -%}
  {%- for c in columns -%}{%- do out.append('`' ~ (c | replace('`', '``')) ~ '`') -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro sql_string(value) -%}
  '{{ value | string | replace('\\', '\\\\') | replace("'", "\\'") }}'
{%- endmacro %}

{% macro rows_as_values(rows, names) -%}
  {#- Inline VALUES holding `names` from each row, as strings; an empty result when there are none. -#}
  {%- if rows | length == 0 -%}
    select {% for n in names %}cast(null as string) as {{ n }}{{ ', ' if not loop.last }}{% endfor %} where false
  {%- else -%}
    select * from values
    {%- for row in rows %}
      ({% for n in names %}{{ spark_bucketing.sql_string(row[n]) }}{{ ', ' if not loop.last }}{% endfor %}){{ ',' if not loop.last }}
    {%- endfor %}
    as violations({{ names | join(', ') }})
  {%- endif -%}
{%- endmacro %}
