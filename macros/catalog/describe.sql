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
  {#- The table's description, from DESCRIBE TABLE EXTENDED (or its `rows`, read already: described_run). -#}
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

{% macro query_columns(sql, rows=none) %}
  {#- The query's output columns (name -> Spark type) without running it:
      from DESCRIBE QUERY's (name, type) `rows`, read already
      (described_run), else read here. -#}
  {%- set rows = rows if rows is not none else run_query('describe query ' ~ sql) -%}
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

{% macro setting_row() %}
  {#- The first column of its row of the extension's switch; tied to SettingRow in scala/Contracts.scala. -#}
  {{ return('# spark_bucketing setting') }}
{% endmacro %}

{% macro query_column_row() %}
  {#- The first column of its rows of the query's columns; tied to QueryColumnRow in scala/Contracts.scala. -#}
  {{ return('# spark_bucketing query column') }}
{% endmacro %}

{% macro described_run(relation, sql) %}
  {#- What an incremental run reads before it plans: {'columns': the
      columns of its query `sql` (query_columns), 'loaded':
      extension_loaded, 'extension': extension_active, 'info': table_info
      of `relation` (none where it is
      not an existing table), 'properties': the table's properties, as
      table_properties reads them, or none (read where they are needed)}.
      With the session extension loaded and the table there, one statement
      reads them all (describe_statement) where DESCRIBE QUERY, the
      switch's SET, DESCRIBE TABLE EXTENDED and SHOW TBLPROPERTIES would be
      four; the SET that tells whether the extension is loaded comes first. -#}
  {%- set loaded = spark_bucketing.extension_loaded() -%}
  {%- set exists = relation is not none and relation.is_table -%}
  {%- if not (loaded and exists) -%}
    {{ return({'columns': spark_bucketing.query_columns(sql), 'loaded': loaded, 'extension': spark_bucketing.extension_active(loaded),
               'info': spark_bucketing.table_info(relation) if exists else none, 'properties': none}) }}
  {%- endif -%}
  {%- set rows = run_query(spark_bucketing.describe_statement() ~ ' ' ~ relation ~ ' query as ' ~ sql).rows -%}
  {%- set query_rows = (spark_bucketing.kind_properties(rows, spark_bucketing.query_column_row()) or {}).items() | list -%}
  {%- set switch = (spark_bucketing.kind_properties(rows, spark_bucketing.setting_row()) or {}).get(spark_bucketing.extension_switch()) -%}
  {#- describe_sections skips the rows after DESCRIBE's (each headed by `#`). -#}
  {{ return({'columns': spark_bucketing.query_columns(sql, query_rows), 'loaded': loaded, 'extension': spark_bucketing.switched_on(switch),
             'info': spark_bucketing.table_info(relation, rows),
             'properties': spark_bucketing.kind_properties(rows, spark_bucketing.property_row()) or {}}) }}
{% endmacro %}
