{#- The layout check: reads a table's files directly (not through the catalog,
    whose bucketed scan would skip files with a bucket id >= N) and returns one
    row per file that breaks the declared spec. Used by the materialization
    before it swaps a table in, and by the bucket_layout test. -#}

{% macro out_of_order_expr(sort_columns) -%}
  {#- True when the previous row of the file sorts after this one (ascending,
      NULLs first, as Spark's writer sorts). -#}
  {%- set terms = [] -%}
  {%- for i in range(sort_columns | length) -%}
    {%- set parts = [] -%}
    {%- for j in range(i) -%}{%- do parts.append('__sb_prev_' ~ j ~ ' <=> __sb_sort_' ~ j) -%}{%- endfor -%}
    {%- do parts.append('(__sb_prev_' ~ i ~ ' is not null and (__sb_sort_' ~ i ~ ' is null or __sb_prev_' ~ i ~ ' > __sb_sort_' ~ i ~ '))') -%}
    {%- do terms.append('(' ~ (parts | join(' and ')) ~ ')') -%}
  {%- endfor -%}
  (__sb_has_prev and ({{ terms | join(' or ') }}))
{%- endmacro %}

{% macro layout_violations_sql(files_view, clustered_by, buckets, bucket_hash, sorted_by=[]) -%}
  {%- set file_bucket_pattern = '^.*/[^/]*_([0-9]+)([.][^/]*)?$' -%}
  with __sb_rows as (
    select
      input_file_name() as file_path,
      {{ spark_bucketing.bucket_id_expr(clustered_by, buckets, bucket_hash) }} as row_bucket
      {%- for c in sorted_by %},
      {{ spark_bucketing.quoted([c])[0] }} as __sb_sort_{{ loop.index0 }}
      {%- endfor %}
      {%- if sorted_by %},
      input_file_block_start() as __sb_block,
      monotonically_increasing_id() as __sb_pos
      {%- endif %}
    from {{ files_view }}
  ),
  {%- if sorted_by %}
  __sb_prev as (
    select *,
      lag(1) over __sb_w is not null as __sb_has_prev
      {%- for c in sorted_by %},
      lag(__sb_sort_{{ loop.index0 }}) over __sb_w as __sb_prev_{{ loop.index0 }}
      {%- endfor %}
    from __sb_rows
    window __sb_w as (partition by file_path order by __sb_block, __sb_pos)
  ),
  {%- endif %}
  __sb_files as (
    select
      file_path,
      regexp_extract(file_path, '^(.*)/[^/]*$', 1) as directory,
      try_cast(nullif(regexp_extract(file_path, '{{ file_bucket_pattern }}', 1), '') as int) as file_bucket,
      count(*) as row_count,
      count_if(row_bucket != try_cast(nullif(regexp_extract(file_path, '{{ file_bucket_pattern }}', 1), '') as int)) as misplaced_rows,
      {% if sorted_by -%}
      count_if({{ spark_bucketing.out_of_order_expr(sorted_by) }})
      {%- else -%}
      cast(0 as bigint)
      {%- endif %} as unsorted_rows
    from {{ '__sb_prev' if sorted_by else '__sb_rows' }}
    group by file_path
  ),
  __sb_checked as (
    select *, count(*) over (partition by directory, file_bucket) as files_for_bucket
    from __sb_files
  )
  select
    file_path,
    file_bucket,
    row_count,
    misplaced_rows,
    unsorted_rows,
    files_for_bucket,
    case
      when file_bucket is null then 'file name carries no bucket id'
      when file_bucket >= {{ buckets }} then 'bucket id ' || file_bucket || ' >= bucket count {{ buckets }}'
      when files_for_bucket > 1 then files_for_bucket || ' files for bucket ' || file_bucket || ' in ' || directory
      when misplaced_rows > 0 then misplaced_rows || ' of ' || row_count || ' rows belong to other buckets'
      when unsorted_rows > 0 then unsorted_rows || ' rows out of sorted_by order'
    end as problem
  from __sb_checked
  where file_bucket is null or file_bucket >= {{ buckets }} or files_for_bucket > 1
     or misplaced_rows > 0 or unsorted_rows > 0
  order by file_path
{%- endmacro %}

{% macro layout_violations(relation, info=none) %}
  {#- Runs the check against a table as the catalog declares it; returns the
      offending files (an agate table, empty when the layout is sound). -#}
  {%- set info = info or spark_bucketing.table_info(relation) -%}
  {%- if not info.buckets -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: " ~ relation ~ " is not a bucketed table (the catalog declares no bucket spec)") -%}
  {%- endif -%}
  {%- if info.bucket_hash == 'hive' -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- set files_view = spark_bucketing.files_view(relation, info) -%}
  {%- set violations = run_query(spark_bucketing.layout_violations_sql(
      files_view, info.clustered_by, info.buckets, info.bucket_hash, info.sorted_by)) -%}
  {%- do run_query('drop view if exists ' ~ files_view) -%}
  {{ return(violations) }}
{% endmacro %}

{% macro files_view(relation, info) %}
  {#- A temporary view over the table's files as plain files: no bucketed scan
      (which would skip or reject badly named files), and a schema given up
      front so that a location without files reads as empty. -#}
  {%- set name = '__sb_files_' ~ (relation.identifier | lower) -%}
  {%- set needed = [] -%}
  {%- for c in info.clustered_by + info.sorted_by if c | lower not in needed | map('lower') | list -%}{%- do needed.append(c) -%}{%- endfor -%}
  {%- set types = {} -%}
  {%- for name_, type_ in info.columns.items() -%}{%- do types.update({name_ | lower: type_}) -%}{%- endfor -%}
  {%- set schema = [] -%}
  {%- for c in needed -%}{%- do schema.append(spark_bucketing.quoted([c])[0] ~ ' ' ~ types[c | lower]) -%}{%- endfor -%}
  {%- do run_query('create or replace temporary view ' ~ name ~ ' (' ~ (schema | join(', ')) ~ ') using '
      ~ info.file_format ~ " options (path '" ~ info.location ~ "')") -%}
  {{ return(name) }}
{% endmacro %}

{% macro describe_violations(violations, limit=20) %}
  {%- set lines = [] -%}
  {%- for row in violations[:limit] -%}
    {%- do lines.append('  ' ~ row['file_path'] ~ ': ' ~ row['problem']) -%}
  {%- endfor -%}
  {%- if violations | length > limit -%}{%- do lines.append('  ... and ' ~ (violations | length - limit) ~ ' more files') -%}{%- endif -%}
  {{ return(lines | join('\n')) }}
{% endmacro %}
