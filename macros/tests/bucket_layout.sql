{#- Generic test: the files of a bucketed table follow its declared spec. One
    result row per offending file; the offending files are also logged. -#}

{% test bucket_layout(model) %}
  {%- if not execute -%}
    select 1 as file_path where false
  {%- else -%}
    {%- set violations = spark_bucketing.layout_violations(model) -%}
    {%- if violations | length > 0 -%}
      {%- do log("bucket_layout: " ~ model ~ " breaks its bucket spec in " ~ (violations | length) ~ " files:\n"
          ~ spark_bucketing.describe_violations(violations, 50), info=true) -%}
    {%- endif -%}
    {{ spark_bucketing.rows_as_values(violations, ['file_path', 'problem']) }}
  {%- endif -%}
{% endtest %}

{% macro rows_as_values(rows, names) -%}
  {#- Inline VALUES holding `names` from each row; an empty result when there are none. -#}
  {%- if rows | length == 0 -%}
    select {% for n in names %}cast(null as string) as {{ n }}{{ ', ' if not loop.last }}{% endfor %} where false
  {%- else -%}
    select * from values
    {%- for row in rows %}
      ({% for n in names %}'{{ (row[n] | string) | replace('\\', '\\\\') | replace("'", "\\'") }}'{{ ', ' if not loop.last }}{% endfor %}){{ ',' if not loop.last }}
    {%- endfor %}
    as violations({{ names | join(', ') }})
  {%- endif -%}
{%- endmacro %}
