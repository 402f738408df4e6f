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

{% macro describe_request() %}
  {#- The session extension's request, in a comment after DESCRIBE TABLE
      EXTENDED, that it answers by also reading the table's properties and
      its switch and describing a query; tied to DescribeRequest in
      scala/Contracts.scala. -#}
  {{ return('spark_bucketing describe') }}
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
      of `relation` (none where it is not an existing table),
      'properties': the table's properties, as table_properties reads
      them, or none (read where they are needed)}.
      Where the table is there, one DESCRIBE TABLE EXTENDED carries the
      extension's request (describe_request) in a comment: the extension
      answers it with all of them, where DESCRIBE QUERY, the SET that tells
      whether it is loaded, its switch's SET, DESCRIBE TABLE EXTENDED and
      SHOW TBLPROPERTIES would be five statements; stock Spark answers the
      DESCRIBE alone, which tells the extension is not loaded. A query with
      a bracketed comment of its own cannot ride in one: it is described by
      a statement of its own. -#}
  {%- if relation is none or not relation.is_table -%}
    {%- set loaded = spark_bucketing.extension_loaded() -%}
    {{ return({'columns': spark_bucketing.query_columns(sql), 'loaded': loaded, 'extension': spark_bucketing.extension_active(loaded),
               'info': none, 'properties': none}) }}
  {%- endif -%}
  {%- set carried = '/*' not in sql and '*/' not in sql -%}
  {%- set request = spark_bucketing.describe_request() ~ (' query as ' ~ sql if carried else '') -%}
  {%- set rows = run_query('describe table extended ' ~ relation ~ ' /* ' ~ request ~ '\n*/').rows -%}
  {%- set setting = spark_bucketing.kind_properties(rows, spark_bucketing.setting_row()) -%}
  {%- set loaded = setting is not none -%}
  {%- set query_rows = (spark_bucketing.kind_properties(rows, spark_bucketing.query_column_row()) or {}).items() | list -%}
  {#- describe_sections skips the rows after DESCRIBE's (each headed by `#`). -#}
  {{ return({'columns': spark_bucketing.query_columns(sql, query_rows if loaded and carried else none), 'loaded': loaded,
             'extension': loaded and spark_bucketing.switched_on(setting.get(spark_bucketing.extension_switch())),
             'info': spark_bucketing.table_info(relation, rows),
             'properties': (spark_bucketing.kind_properties(rows, spark_bucketing.property_row()) or {}) if loaded else none}) }}
{% endmacro %}
