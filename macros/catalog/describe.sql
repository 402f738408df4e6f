{#- What the catalog says about a table or a query, parsed from DESCRIBE
    (works the same over the session and thrift connections). -#}

{% macro strip_column_list(text) %}
  {#- "[`a`, `b`]" -> ['a', 'b'] -#}
  {%- set inner = (text or '') | trim -%}
  {%- if inner.startswith('[') -%}{%- set inner = inner[1:-1] -%}{%- endif -%}
  {%- set out = [] -%}
  {%- for part in inner.split(',') -%}
    {%- set name = part | trim -%}
    {%- if name.startswith('`') and name.endswith('`') -%}{%- set name = name[1:-1] | replace('``', '`') -%}{%- endif -%}
    {%- if name -%}{%- do out.append(name) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro describe_sections(rows) %}
  {#- DESCRIBE TABLE EXTENDED rows -> (columns {name: type}, partition columns, details {key: value}). -#}
  {%- set columns = {} -%}
  {%- set partition_by = [] -%}
  {%- set details = {} -%}
  {%- set section = namespace(name='columns') -%}
  {%- for row in rows -%}
    {%- set key = (row[0] or '') | trim -%}
    {%- if key == '# Partition Information' -%}{%- set section.name = 'partitions' -%}
    {%- elif key.startswith('# Detailed Table Information') -%}{%- set section.name = 'details' -%}
    {%- elif key == '' or key.startswith('#') -%}
    {%- elif section.name == 'columns' -%}{%- do columns.update({key: row[1]}) -%}
    {%- elif section.name == 'partitions' -%}{%- do partition_by.append(key) -%}
    {%- elif section.name == 'details' -%}{%- do details.update({key: row[1]}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return((columns, partition_by, details)) }}
{% endmacro %}

{% macro describe_statement() %}
  {#- The session extension's statement that reads a table's description,
      properties and partitions at once (table_state); tied to
      DescribeStatement in scala/Contracts.scala, as are its markers. -#}
  {{ return('spark_bucketing describe table') }}
{% endmacro %}

{% macro describe_properties_marker() %}{{ return('# spark_bucketing properties') }}{% endmacro %}

{% macro describe_partitions_marker() %}{{ return('# spark_bucketing partitions') }}{% endmacro %}

{% macro table_state(relation, extension) %}
  {#- What a run reads of an existing table before it writes: {'info':
      table_info, 'props': its properties {key: value}, or none where
      read_metadata reads them, 'partitions': catalog_partitions, or none
      where the publish lists them}. With the session extension
      (`extension`) one statement reads all three, each part as DESCRIBE
      TABLE EXTENDED, SHOW TBLPROPERTIES and SHOW PARTITIONS read it;
      without it, only DESCRIBE here. -#}
  {%- if not extension -%}
    {{ return({'info': spark_bucketing.table_info(relation), 'props': none, 'partitions': none}) }}
  {%- endif -%}
  {%- set described, props, names = [], {}, [] -%}
  {%- set section = namespace(name='described', partitioned=false) -%}
  {%- for row in run_query(spark_bucketing.describe_statement() ~ ' ' ~ relation) -%}
    {%- if row[0] == spark_bucketing.describe_properties_marker() -%}{%- set section.name = 'props' -%}
    {%- elif row[0] == spark_bucketing.describe_partitions_marker() -%}{%- set section.name = 'partitions' -%}{%- set section.partitioned = true -%}
    {%- elif section.name == 'described' -%}{%- do described.append(row) -%}
    {%- elif section.name == 'props' -%}{%- do props.update({row[0]: row[1]}) -%}
    {%- else -%}{%- do names.append(row[0]) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return({'info': spark_bucketing.table_info(relation, described), 'props': props,
             'partitions': spark_bucketing.catalog_partitions(relation, names) if section.partitioned else none}) }}
{% endmacro %}

{% macro table_info(relation, described=none) %}
  {#- The table's columns, partitioning, bucket spec, format and location,
      from DESCRIBE TABLE EXTENDED (or its rows, `described`). -#}
  {%- set rows = described if described is not none else run_query('describe table extended ' ~ relation) -%}
  {%- set columns, partition_by, details = spark_bucketing.describe_sections(rows) -%}
  {%- set provider = (details.get('Provider') or '') | lower -%}
  {%- set serde = (details.get('Serde Library', '') ~ details.get('InputFormat', '')) | lower -%}
  {%- set file_format = provider if provider in ('parquet', 'orc') else ('orc' if 'orc' in serde else ('parquet' if 'parquet' in serde else provider)) -%}
  {%- set num_buckets = details.get('Num Buckets') -%}
  {{ return({
      'columns': columns,
      'partition_by': partition_by,
      'provider': provider,
      'file_format': file_format,
      'bucket_hash': 'hive' if provider == 'hive' else 'spark',
      'buckets': (num_buckets | int) if num_buckets and (num_buckets | int) > 0 else none,
      'clustered_by': spark_bucketing.strip_column_list(details.get('Bucket Columns')),
      'sorted_by': spark_bucketing.strip_column_list(details.get('Sort Columns')),
      'location': details.get('Location'),
      'type': (details.get('Type') or '') | lower,
  }) }}
{% endmacro %}

{% macro query_columns(sql) %}
  {#- The query's output columns (name -> Spark type) without running it. -#}
  {%- set rows = run_query('describe query ' ~ sql) -%}
  {%- set columns = {} -%}
  {%- for row in rows -%}
    {%- if row[0] and not row[0].startswith('#') -%}{%- do columns.update({row[0]: row[1]}) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(columns) }}
{% endmacro %}
