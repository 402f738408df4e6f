{#- A table's data files: which folder each is in, and per partition folder
    the files and rows it holds, read by scans that read no data column. -#}

{% macro table_files_function() %}
  {#- The session extension's table function: a bucketed folder's files with
      the rows their footers state; tied to TableFilesFunction in
      scala/Contracts.scala. -#}
  {{ return('spark_bucketing_files') }}
{% endmacro %}

{% macro folder_files_sql(folder, partition_by) -%}
  {#- files_sql's rows of a bucketed folder (write_folder's description),
      from its listing and its files' footers, through the session
      extension's table function: no Spark job. -#}
  select file as __sb_file, rows as __sb_rows
         {%- for p in partition_by %}, partition_values[{{ loop.index0 }}] as __sb_p{{ loop.index0 }}{% endfor %}
  from {{ spark_bucketing.table_files_function() }}({{ spark_bucketing.sql_string(tojson(folder)) }})
{%- endmacro %}

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

{% macro files_sql(relation, partition_by, only=none) -%}
  {#- One row per data file: __sb_file (input_file_name()), __sb_rows, and the
      partition values as strings __sb_p<i>. Reads no data column, so Spark
      never plans it as a bucketed scan (which would skip files whose bucket
      id is too high): every file is counted, whatever the session's
      settings, and Parquet and ORC answer from their footers. Parses
      nothing per row. `only`, a list of partition values, restricts the scan
      to those partitions. -#}
  select input_file_name() as __sb_file, count(*) as __sb_rows
         {%- for p in partition_by %}, cast({{ spark_bucketing.quoted([p])[0] }} as string) as __sb_p{{ loop.index0 }}{% endfor %}
  from {{ relation }}
  {%- if only is not none %}
  where {{ spark_bucketing.partition_match(partition_by, only) }}
  {%- endif %}
  group by all
{%- endmacro %}

{% macro split_other(rows) %}
  {#- A query's rows with __sb_other false, and those with it true. -#}
  {%- set mine = [] -%}
  {%- set other = [] -%}
  {%- for row in rows -%}{%- do (other if row['__sb_other'] else mine).append(row) -%}{%- endfor -%}
  {{ return((mine, other)) }}
{% endmacro %}

{% macro folder_stats(rows, partition_by, rows_column='__sb_rows') %}
  {#- Per partition folder that holds files: {path, location, files, rows,
      values {column: value as string}}, from per-file rows of with_folders_sql. -#}
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

{% macro partition_stats(relation, partition_by, only=none) %}
  {#- folder_stats of `relation` (of the partitions in `only`, if given):
      one shuffle (per file); the files are summed per folder here. -#}
  {%- if only is not none and only | length == 0 -%}{{ return([]) }}{%- endif -%}
  {%- set query = spark_bucketing.with_folders_sql(spark_bucketing.files_sql(relation, partition_by, only), partition_by | length) -%}
  {{ return(spark_bucketing.folder_stats(run_query(query), partition_by)) }}
{% endmacro %}
