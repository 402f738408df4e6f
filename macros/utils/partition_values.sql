{#- Partition values: {column: value as string, or none for NULL}, compared
    by column name in any case, and the SQL that names or matches them. -#}

{% macro lookup_ci(mapping, key) %}
  {%- for k, v in mapping.items() if k | lower == key | lower -%}{{ return(v) }}{%- endfor -%}
  {{ return(none) }}
{% endmacro %}

{% macro values_key(values, partition_by) %}
  {#- One string per partition: its values in partition_by order (column names in any case). -#}
  {%- set key = [] -%}
  {%- for col in partition_by -%}
    {%- set value = spark_bucketing.lookup_ci(values, col) -%}
    {%- do key.append(none if value is none else value | string) -%}
  {%- endfor -%}
  {{ return(tojson(key)) }}
{% endmacro %}

{% macro values_in(values, values_list, partition_by) %}
  {#- Whether partition `values` is one of `values_list`. -#}
  {%- set key = spark_bucketing.values_key(values, partition_by) -%}
  {%- for other in values_list if spark_bucketing.values_key(other, partition_by) == key -%}{{ return(true) }}{%- endfor -%}
  {{ return(false) }}
{% endmacro %}

{% macro static_values(spec, partitions) %}
  {#- Partitions given as {column in any case: value} as {partition column: value as string}. -#}
  {%- set out = [] -%}
  {%- for p in partitions or [] -%}
    {%- set v = {} -%}
    {%- for col in spec.partition_by -%}{%- do v.update({col: spark_bucketing.lookup_ci(p, col) | string}) -%}{%- endfor -%}
    {%- do out.append(v) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro unescape_path_name(text) %}
  {#- Spark's escapePathName backwards: %XX (always an ASCII character) -> the character. -#}
  {%- set pieces = text.split('%') -%}
  {%- set out = [pieces[0]] -%}
  {%- for piece in pieces[1:] -%}
    {%- do out.append('%c' | format(piece[:2] | int(base=16)) ~ piece[2:]) -%}
  {%- endfor -%}
  {{ return(out | join('')) }}
{% endmacro %}

{% macro partition_clause(values) -%}
  partition ({% for col, value in values.items() %}{{ spark_bucketing.quoted([col])[0] }} = {{ spark_bucketing.sql_string(value) }}{{ ', ' if not loop.last }}{% endfor %})
{%- endmacro %}

{% macro partition_match(partition_by, values_list) -%}
  {#- SQL true when the row's partition columns equal one of `values_list`
      (values as strings). `<=>` on the value as a string is a filter Spark
      never hands to the metastore: Hive metastores fail on pushed filters
      (non-string keys, quotes or backslashes in a value, long OR chains), so
      Spark reads the partition list and matches it itself. -#}
  {%- if values_list | length == 0 -%}false
  {%- else -%}
  ({%- for values in values_list -%}
    ({%- for col in partition_by -%}
      {%- set value = spark_bucketing.lookup_ci(values, col) -%}
      cast({{ spark_bucketing.quoted([col])[0] }} as string) <=> {{ 'null' if value is none else spark_bucketing.sql_string(value) }}{{ ' and ' if not loop.last }}
    {%- endfor -%}){{ ' or ' if not loop.last }}
  {%- endfor -%})
  {%- endif -%}
{%- endmacro %}
