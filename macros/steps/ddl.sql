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
      {{ ' comment ' ~ spark_bucketing.sql_string(col.description) }}
    {%- endfor -%}
  {%- endif -%}
{%- endmacro %}

{% macro table_properties_clause(spec) -%}
  {%- set props = {} -%}
  {%- do props.update(config.get('tblproperties') or {}) -%}
  {%- set version = spec.get('bucketing_version', 1) -%}
  {%- if spec.bucket_hash == 'hive' and (spec.buckets or version == 2) -%}
    {#- Hive 3 and Trino pick the hash by this label: v1 is the hash Spark writes, v2 the extension's folder write
        (an evolving table, declared unbucketed, needs it too: the extension reads its partitions by it). -#}
    {%- do props.update({'bucketing_version': version | string}) -%}
  {%- endif -%}
  {%- if props -%}
  tblproperties (
    {%- for key, value in props.items() %}
    {{ spark_bucketing.sql_string(key) }} = {{ spark_bucketing.sql_string(value) }}{{ ',' if not loop.last }}
    {%- endfor %}
  )
  {%- endif -%}
{%- endmacro %}

{% macro ddl_names(names, lower_case) %}
  {{ return(spark_bucketing.quoted(names | map('lower') | list if lower_case else names)) }}
{% endmacro %}

{% macro default__create_bucketed_table_sql(relation, spec, columns, location) -%}
  {#- A Hive table names its columns in lower case: the Hive metastore stores
      them so, and Hive's code matches bucket columns against them exactly
      (Spark keeps the query's case, and a later ALTER TABLE then fails).
      Spark resolves either spelling. A datasource table keeps the query's. -#}
  {%- set partition_lower = spec.partition_by | map('lower') | list -%}
  {%- set is_hive = spec.bucket_hash == 'hive' -%}
  create table {{ relation }} (
  {%- for name, data_type in columns.items() if not (is_hive and name | lower in partition_lower) %}
    {{ spark_bucketing.ddl_names([name], is_hive)[0] }} {{ data_type }}{{ spark_bucketing.column_comment(name) }}{{ ',' if not loop.last }}
  {%- endfor %}
  )
  {% if not is_hive -%}
  {#- The option is per table, so that no write of it rolls files over, whatever the session says. #}
  using {{ spec.file_format }} options (maxRecordsPerFile '0')
  {% endif -%}
  {{ comment_clause() }}
  {%- if spec.partition_by %}
  partitioned by (
    {%- for name in spec.partition_by -%}
      {{ spark_bucketing.ddl_names([name], is_hive)[0] }}{{ ' ' ~ columns[name] if is_hive }}{{ ', ' if not loop.last }}
    {%- endfor -%}
  )
  {%- endif %}
  {%- if spec.buckets %}
  clustered by ({{ spark_bucketing.ddl_names(spec.clustered_by, is_hive) | join(', ') }})
  {%- if spec.sorted_by %}
  sorted by ({{ spark_bucketing.ddl_names(spec.sorted_by, is_hive) | join(', ') }})
  {%- endif %}
  into {{ spec.buckets }} buckets
  {%- endif %}
  {%- if is_hive %}
  stored as {{ spec.file_format }}
  {%- endif %}
  {%- if location %}
  location {{ spark_bucketing.sql_string(location) }}
  {%- endif %}
  {{ spark_bucketing.table_properties_clause(spec) }}
{%- endmacro %}
