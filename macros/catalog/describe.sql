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

{% macro table_info(relation, rows=none) %}
  {#- The table's description, from DESCRIBE TABLE EXTENDED (or its `rows`, read already: described_table). -#}
  {%- set rows = rows if rows is not none else run_query('describe table extended ' ~ relation) -%}
  {%- set columns, partition_by, details = spark_bucketing.describe_sections(rows) -%}
  {%- set provider = (details.get('Provider') or '') | lower -%}
  {%- set serde = (details.get('Serde Library', '') ~ details.get('InputFormat', '')) | lower -%}
  {%- set file_format = provider if provider in ('parquet', 'orc') else ('orc' if 'orc' in serde else ('parquet' if 'parquet' in serde else provider)) -%}
  {%- set num_buckets = details.get('Num Buckets') -%}
  {%- set version = modules.re.search('(?:^|[\\[, ])bucketing_version=(\\d+)', details.get('Table Properties') or '') if provider == 'hive' else none -%}
  {{ return({
      'columns': columns,
      'partition_by': partition_by,
      'provider': provider,
      'file_format': file_format,
      'bucket_hash': 'hive' if provider == 'hive' else 'spark',
      'bucketing_version': (version.group(1) | int) if version else 1,
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

{% macro describe_statement() %}
  {#- The session extension's statement that describes a table and reads
      its properties at once; tied to DescribeStatement in scala/Contracts.scala. -#}
  {{ return('spark_bucketing describe table') }}
{% endmacro %}

{% macro property_row() %}
  {#- The first column of that statement's property rows; tied to PropertyRow in scala/Contracts.scala. -#}
  {{ return('# spark_bucketing property') }}
{% endmacro %}

{% macro described_table(relation, extension) %}
  {#- {'info': table_info, 'properties': the table's properties, as
      table_properties reads them}: with the session extension (`extension`:
      extension_active) one statement, a round trip saved; without, the
      description alone ('properties' none: read where they are needed). -#}
  {%- if not extension -%}{{ return({'info': spark_bucketing.table_info(relation), 'properties': none}) }}{%- endif -%}
  {%- set result = run_query(spark_bucketing.describe_statement() ~ ' ' ~ relation) -%}
  {#- describe_sections skips the property rows (headed by `#`). -#}
  {{ return({'info': spark_bucketing.table_info(relation, result),
             'properties': spark_bucketing.kind_properties(result.rows, spark_bucketing.property_row()) or {}}) }}
{% endmacro %}
