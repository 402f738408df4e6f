{#- CREATE TABLE statements. `spec.buckets` none declares the table unbucketed
    (while its partitions follow different specs); `spec.bucket_hash` picks
    the table kind: a Hive-format table for 'hive', a datasource table for 'spark'. -#}

{% macro create_bucketed_table_sql(relation, spec, columns, location) %}
  {{ return(adapter.dispatch('create_bucketed_table_sql', 'spark_bucketing')(relation, spec, columns, location)) }}
{% endmacro %}

{% macro column_comment(name) -%}
  {%- set persist = config.get('persist_docs', {}) -%}
  {%- if persist is mapping and persist.get('columns') -%}
    {%- for key, col in model.columns.items() if key | lower == name | lower and col.description -%}
      {{ " comment '" ~ (col.description | replace('\\', '\\\\') | replace("'", "\\'")) ~ "'" }}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro %}

{% macro table_properties_clause(spec) -%}
  {%- set props = {} -%}
  {%- do props.update(config.get('tblproperties') or {}) -%}
  {%- if spec.bucket_hash == 'hive' and spec.buckets -%}
    {#- v1 is the hash Spark writes; a v2 label would send Hive 3 and Trino to the wrong files. -#}
    {%- do props.update({'bucketing_version': '1'}) -%}
  {%- endif -%}
  {%- if props -%}
  tblproperties (
    {%- for key, value in props.items() %}
    '{{ key }}' = '{{ value | string | replace("'", "\\'") }}'{{ ',' if not loop.last }}
    {%- endfor %}
  )
  {%- endif -%}
{%- endmacro %}

{% macro default__create_bucketed_table_sql(relation, spec, columns, location) -%}
  {%- set partition_lower = spec.partition_by | map('lower') | list -%}
  {%- set is_hive = spec.bucket_hash == 'hive' -%}
  create table {{ relation }} (
  {%- set data_columns = [] -%}
  {%- for name, data_type in columns.items() if not (is_hive and name | lower in partition_lower) -%}
    {%- do data_columns.append(name) %}
    {{ spark_bucketing.quoted([name])[0] }} {{ data_type }}{{ spark_bucketing.column_comment(name) }}{{ ',' if not loop.last }}
  {%- endfor %}
  )
  {% if not is_hive -%}
  using {{ spec.file_format }}
  {% endif -%}
  {{ comment_clause() }}
  {%- if spec.partition_by %}
  partitioned by (
    {%- for name in spec.partition_by -%}
      {{ spark_bucketing.quoted([name])[0] }}{{ ' ' ~ columns[name] if is_hive }}{{ ', ' if not loop.last }}
    {%- endfor -%}
  )
  {%- endif %}
  {%- if spec.buckets %}
  clustered by ({{ spark_bucketing.quoted(spec.clustered_by) | join(', ') }})
  {%- if spec.sorted_by %}
  sorted by ({{ spark_bucketing.quoted(spec.sorted_by) | join(', ') }})
  {%- endif %}
  into {{ spec.buckets }} buckets
  {%- endif %}
  {%- if is_hive %}
  stored as {{ spec.file_format }}
  {%- endif %}
  {%- if location %}
  location '{{ location }}'
  {%- endif %}
  {{ spark_bucketing.table_properties_clause(spec) }}
{%- endmacro %}
