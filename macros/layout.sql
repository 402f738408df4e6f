{#- The layout check. Reads a table through the catalog with bucketed reads
    turned off (a bucketed scan silently skips files whose bucket id is too
    high, and rejects names without one), recomputes every row's bucket with
    the spec its partition should follow, and returns one row per file that
    breaks it. Used by the materializations before they publish a write, and
    by the bucket_layout test. -#}

{% macro out_of_order_expr(indexes) -%}
  {#- True when the previous row of the file sorts after this one on the sort
      columns at `indexes` (ascending, NULLs first, as Spark's writer sorts). -#}
  {%- set terms = [] -%}
  {%- for i in indexes -%}
    {%- set parts = [] -%}
    {%- for j in indexes[:loop.index0] -%}{%- do parts.append('__sb_prev_' ~ j ~ ' <=> __sb_sort_' ~ j) -%}{%- endfor -%}
    {%- do parts.append('(__sb_prev_' ~ i ~ ' is not null and (__sb_sort_' ~ i ~ ' is null or __sb_prev_' ~ i ~ ' > __sb_sort_' ~ i ~ '))') -%}
    {%- do terms.append('(' ~ (parts | join(' and ')) ~ ')') -%}
  {%- endfor -%}
  {{ '(__sb_has_prev and (' ~ (terms | join(' or ')) ~ '))' if terms else 'false' }}
{%- endmacro %}

{% macro expected_specs(info, meta) %}
  {#- [(spec record, [partition paths] or none for "every partition")]: the
      recorded spec of each partition where metadata exists, else the spec
      the catalog declares. -#}
  {%- set declared = {'hash': info.bucket_hash, 'clustered_by': info.clustered_by, 'buckets': info.buckets, 'sorted_by': info.sorted_by} if info.buckets else none -%}
  {%- if meta.table -%}{{ return([(meta.table, none)]) }}{%- endif -%}
  {%- if not meta.partitions -%}{{ return([(declared, none)] if declared else []) }}{%- endif -%}
  {%- set groups = [] -%}
  {%- for path, rec in meta.partitions | dictsort -%}
    {%- set found = namespace(done=false) -%}
    {%- for spec, paths in groups if not found.done and spark_bucketing.same_spec(spec, rec) -%}
      {%- do paths.append(path) -%}{%- set found.done = true -%}
    {%- endfor -%}
    {%- if not found.done -%}{%- do groups.append((rec, [path])) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(groups) }}
{% endmacro %}

{% macro layout_violations_sql(relation, partition_count, groups) -%}
  {%- set sort_columns = [] -%}
  {%- for spec, _ in groups -%}
    {%- for c in spec.sorted_by if c | lower not in sort_columns | map('lower') | list -%}{%- do sort_columns.append(c) -%}{%- endfor -%}
  {%- endfor -%}
  {%- set sort_lower = sort_columns | map('lower') | list -%}
  {%- set file_bucket_pattern = '^.*/[^/]*_([0-9]+)([.][^/]*)?$' -%}
  with __sb_scan as (
    select *, {{ spark_bucketing.partition_path_expr('__sb_dir', partition_count) }} as __sb_path
    from (
      select *, input_file_name() as __sb_file, {{ spark_bucketing.file_dir_expr() }} as __sb_dir
        {%- if sort_columns -%}, input_file_block_start() as __sb_block, monotonically_increasing_id() as __sb_pos{%- endif %}
      from {{ relation }}
    ) as __sb_files
  ),
  __sb_rows as (
    select
      __sb_file as file_path,
      __sb_path as partition_path,
      case
        {%- for spec, paths in groups %}
        when {{ spark_bucketing.paths_predicate(paths) }} then {{ spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, spec.hash) }}
        {%- endfor %}
      end as row_bucket,
      case
        {%- for spec, paths in groups %}
        when {{ spark_bucketing.paths_predicate(paths) }} then {{ spec.buckets }}
        {%- endfor %}
      end as buckets,
      case
        {%- for spec, paths in groups %}
        when {{ spark_bucketing.paths_predicate(paths) }} then {{ loop.index0 }}
        {%- endfor %}
      end as spec_group
      {%- for c in sort_columns %},
      {{ spark_bucketing.quoted([c])[0] }} as __sb_sort_{{ loop.index0 }}
      {%- endfor %}
      {%- if sort_columns %},
      lag(1) over __sb_w is not null as __sb_has_prev
      {%- for c in sort_columns %},
      lag({{ spark_bucketing.quoted([c])[0] }}) over __sb_w as __sb_prev_{{ loop.index0 }}
      {%- endfor %}
      {%- endif %}
    from __sb_scan
    {%- if sort_columns %}
    window __sb_w as (partition by __sb_file order by __sb_block, __sb_pos)
    {%- endif %}
  ),
  __sb_files as (
    select
      file_path,
      max(partition_path) as partition_path,
      regexp_extract(file_path, '^(.*)/[^/]*$', 1) as directory,
      try_cast(nullif(regexp_extract(file_path, '{{ file_bucket_pattern }}', 1), '') as int) as file_bucket,
      max(buckets) as buckets,
      count(*) as row_count,
      count_if(row_bucket != try_cast(nullif(regexp_extract(file_path, '{{ file_bucket_pattern }}', 1), '') as int)) as misplaced_rows,
      count_if(case
        {%- for spec, _ in groups %}
        {%- set idx = [] -%}
        {%- for c in spec.sorted_by -%}{%- do idx.append(sort_lower.index(c | lower)) -%}{%- endfor %}
        when spec_group = {{ loop.index0 }} then {{ spark_bucketing.out_of_order_expr(idx) }}
        {%- endfor %}
        else false
      end) as unsorted_rows
    from __sb_rows
    group by file_path
  ),
  __sb_checked as (
    select *, count(*) over (partition by directory, file_bucket) as files_for_bucket
    from __sb_files
  )
  select
    file_path,
    partition_path,
    file_bucket,
    row_count,
    misplaced_rows,
    unsorted_rows,
    files_for_bucket,
    case
      when buckets is null then 'no bucket spec is recorded or declared for partition ' || partition_path
      when file_bucket is null then 'file name carries no bucket id'
      when file_bucket >= buckets then 'bucket id ' || file_bucket || ' >= bucket count ' || buckets
      when files_for_bucket > 1 then files_for_bucket || ' files for bucket ' || file_bucket || ' in ' || directory
      when misplaced_rows > 0 then misplaced_rows || ' of ' || row_count || ' rows belong to other buckets'
      when unsorted_rows > 0 then unsorted_rows || ' rows out of sorted_by order'
    end as problem
  from __sb_checked
  where buckets is null or file_bucket is null or file_bucket >= buckets or files_for_bucket > 1
     or misplaced_rows > 0 or unsorted_rows > 0
  order by file_path
{%- endmacro %}

{% macro paths_predicate(paths) -%}
  {%- if paths is none -%}true
  {%- else -%}__sb_path in ({% for p in paths %}{{ spark_bucketing.sql_string(p) }}{{ ', ' if not loop.last }}{% endfor %})
  {%- endif -%}
{%- endmacro %}

{% macro layout_violations(relation, info=none, meta=none) %}
  {#- The offending files of `relation` (an agate table, empty when sound). -#}
  {%- set info = info or spark_bucketing.table_info(relation) -%}
  {%- set meta = meta or spark_bucketing.read_metadata(relation) -%}
  {%- set groups = spark_bucketing.expected_specs(info, meta) -%}
  {%- if not groups -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: " ~ relation ~ " has no bucket spec: the catalog declares none and no spark_bucketing metadata is recorded") -%}
  {%- endif -%}
  {%- for spec, _ in groups if spec.hash == 'hive' -%}
    {%- if loop.first -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- endfor -%}
  {%- set previous = spark_bucketing.apply_settings({'spark.sql.sources.bucketing.enabled': 'false'}) -%}
  {%- set violations = run_query(spark_bucketing.layout_violations_sql(relation, info.partition_by | length, groups)) -%}
  {%- do spark_bucketing.restore_settings(previous) -%}
  {{ return(violations) }}
{% endmacro %}

{% macro describe_violations(violations, limit=20) %}
  {%- set lines = [] -%}
  {%- for row in violations[:limit] -%}
    {%- do lines.append('  ' ~ row['file_path'] ~ ': ' ~ row['problem']) -%}
  {%- endfor -%}
  {%- if violations | length > limit -%}{%- do lines.append('  ... and ' ~ (violations | length - limit) ~ ' more files') -%}{%- endif -%}
  {{ return(lines | join('\n')) }}
{% endmacro %}
