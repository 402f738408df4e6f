{#- Partitions: which folder a row's file is in, what the catalog lists, and
    the clauses that name one partition. Partition folders are never built
    by hand: their names come from the files Spark wrote (file_dir_expr) or
    from the catalog (SHOW PARTITIONS), which spell them the same way (Spark
    escapes / = : % ' \ # ? [ ] * and control characters as %XX). -#}

{% macro file_dir_expr(file_expr='input_file_name()') -%}
  {#- The folder of a file (`file_expr`, an input_file_name() value) as a
      path the catalog accepts. input_file_name() is a URI (a space shows as
      %20, a folder's own %2F as %252F); decoding it once gives the folder as
      written. url_decode also reads '+' as a space, so a literal '+' is
      protected first. -#}
  regexp_extract(url_decode(replace({{ file_expr }}, '+', '%2B')), '^(.*)/[^/]*$', 1)
{%- endmacro %}

{% macro partition_path_expr(dir_expr, partition_count) -%}
  {#- The partition's folder names (e.g. order_date=2024-06-01), the last
      `partition_count` parts of its folder; '' for an unpartitioned table. -#}
  {%- if partition_count == 0 -%}''
  {%- else -%}regexp_extract({{ dir_expr }}, '([^/]+{{ '(?:/[^/]+)' ~ '{' ~ (partition_count - 1) ~ '}' if partition_count > 1 }})$', 1)
  {%- endif -%}
{%- endmacro %}

{% macro with_folders_sql(files_sql, partition_count) -%}
  {#- The rows of `files_sql` (each with __sb_file, an input_file_name()
      value, after aggregation) plus the file's folder (__sb_dir) and the
      partition's folder names (__sb_path): string work per file, not per row. -#}
  select __sb_dir, {{ spark_bucketing.partition_path_expr('__sb_dir', partition_count) }} as __sb_path, *
  from (
    select {{ spark_bucketing.file_dir_expr('__sb_file') }} as __sb_dir, *
    from ({{ files_sql }}) as __sb_files
  ) as __sb_dirs
{%- endmacro %}

{% macro unescape_path_name(text) %}
  {#- Spark's escapePathName backwards: %XX (always an ASCII character) -> the character. -#}
  {%- set pieces = text.split('%') -%}
  {%- set out = [pieces[0]] -%}
  {%- for piece in pieces[1:] -%}
    {%- do out.append('%c' | format(piece[:2] | int(base=16)) ~ piece[2:]) -%}
  {%- endfor -%}
  {{ return(out | join('')) }}
{% endmacro %}

{% macro catalog_partitions(relation) %}
  {#- The partitions the catalog lists: {path: {column: value}} (SHOW PARTITIONS). -#}
  {%- set out = {} -%}
  {%- for row in run_query('show partitions ' ~ relation) -%}
    {%- set values = {} -%}
    {%- for part in row[0].split('/') -%}
      {%- set name, value = part.split('=', 1) -%}
      {%- do values.update({spark_bucketing.unescape_path_name(name): none if value == '__HIVE_DEFAULT_PARTITION__' else spark_bucketing.unescape_path_name(value)}) -%}
    {%- endfor -%}
    {%- do out.update({row[0]: values}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro partition_location(relation, values) %}
  {#- One partition's location as the catalog holds it (DESCRIBE .. PARTITION). -#}
  {%- for row in run_query('describe table extended ' ~ relation ~ ' ' ~ spark_bucketing.partition_clause(values)) if (row[0] or '') | trim == 'Location' -%}
    {{ return(row[1]) }}
  {%- endfor -%}
  {{ return(none) }}
{% endmacro %}

{% macro partition_stats(relation, partition_by, only=none) %}
  {#- Per partition folder that holds files: {path, location, files, rows,
      values {column: value as string}}. `only`, a list of partition values,
      restricts the scan to those partitions. The scan reads no data column,
      so Spark never plans it as a bucketed scan (which would skip files
      whose bucket id is too high): every file is counted, whatever the
      session's settings, and Parquet and ORC answer from their footers.
      One shuffle (per file); the files are summed per folder here. -#}
  {%- if only is not none and only | length == 0 -%}{{ return([]) }}{%- endif -%}
  {%- set query = spark_bucketing.with_folders_sql(spark_bucketing.files_sql(relation, partition_by, only), partition_by | length) -%}
  {{ return(spark_bucketing.folder_stats(run_query(query), partition_by)) }}
{% endmacro %}

{% macro split_other(rows) %}
  {#- A query's rows with __sb_other false, and those with it true. -#}
  {%- set mine = [] -%}
  {%- set other = [] -%}
  {%- for row in rows -%}{%- do (other if row['__sb_other'] else mine).append(row) -%}{%- endfor -%}
  {{ return((mine, other)) }}
{% endmacro %}

{% macro folder_stats(rows, partition_by, rows_column='__sb_rows') %}
  {#- partition_stats' entries from per-file rows of with_folders_sql. -#}
  {%- set folders = {} -%}
  {%- for row in rows -%}
    {%- set s = folders.get(row['__sb_dir']) -%}
    {%- if s is none -%}
      {%- set values = {} -%}
      {%- for p in partition_by -%}{%- do values.update({p: row['__sb_p' ~ loop.index0]}) -%}{%- endfor -%}
      {%- set s = {'path': row['__sb_path'], 'location': row['__sb_dir'], 'files': 0, 'rows': 0, 'values': values} -%}
      {%- do folders.update({row['__sb_dir']: s}) -%}
    {%- endif -%}
    {%- do s.update({'files': s.files + 1, 'rows': s.rows + row[rows_column] | int}) -%}
  {%- endfor -%}
  {{ return(folders.values() | list) }}
{% endmacro %}

{% macro files_sql(relation, partition_by, only=none) -%}
  {#- One row per data file: __sb_file (input_file_name()), __sb_rows, and the
      partition values as strings __sb_p<i>. Reads no data column (see
      partition_stats), and parses nothing per row. -#}
  select input_file_name() as __sb_file, count(*) as __sb_rows
         {%- for p in partition_by %}, cast({{ spark_bucketing.quoted([p])[0] }} as string) as __sb_p{{ loop.index0 }}{% endfor %}
  from {{ relation }}
  {%- if only is not none %}
  where {{ spark_bucketing.partition_match(partition_by, only) }}
  {%- endif %}
  group by all
{%- endmacro %}

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

{% macro lookup_ci(mapping, key) %}
  {%- for k, v in mapping.items() if k | lower == key | lower -%}{{ return(v) }}{%- endfor -%}
  {{ return(none) }}
{% endmacro %}
