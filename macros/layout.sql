{#- The layout check. Recomputes every row's bucket with the spec its
    partition should follow and reports each file that breaks it. Used by the
    materializations before they publish a write (with the partition stats
    from the same query), and by the bucket_layout and bucket_metadata tests.
    It changes no session setting. -#}

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

{% macro layout_sql(relation, partition_by, groups, output='files') -%}
  {#- The check in one pass over the bucket (and sort) columns, aggregated per
      (file, computed bucket) before any file name is parsed. Every file is
      also listed by a scan that reads no data column (files_sql), so a file
      a bucketed scan would skip is still checked by its name and counted.
      The two are one UNION ALL, grouped per file once. output='files': one
      row per offending file; 'partitions': one row per partition folder with
      its stats and problems. -#}
  {%- set sort_groups = [] -%}
  {#- Indexes into `groups` (a filtered loop would renumber them). -#}
  {%- for spec, _ in groups -%}{%- if spec.sorted_by -%}{%- do sort_groups.append(loop.index0) -%}{%- endif -%}{%- endfor -%}
  {%- set file_bucket_pattern = '^.*/[^/]*_([0-9]+)([.][^/]*)?$' -%}
  with __sb_counts as (
    select __sb_file
      {%- for p in partition_by %}, __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %}, cast(null as int) as __sb_b{{ loop.index0 }}{% endfor %},
      __sb_rows as __sb_listed, cast(0 as bigint) as __sb_n
    from ({{ spark_bucketing.files_sql(relation, partition_by) }}) as __sb_listing
    union all
    select input_file_name() as __sb_file
      {%- for p in partition_by %}, cast({{ spark_bucketing.quoted([p])[0] }} as string) as __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %},
      {{ spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, spec.hash) }} as __sb_b{{ loop.index0 }}
      {%- endfor %},
      cast(0 as bigint) as __sb_listed, count(*) as __sb_n
    from {{ relation }}
    group by all
  ),
  {%- for g in sort_groups %}
  {%- set spec = groups[g][0] %}
  {%- set cols = spark_bucketing.quoted(spec.sorted_by) %}
  __sb_sort_rows_{{ g }} as (
    select input_file_name() as __sb_file, input_file_block_start() as __sb_block,
           monotonically_increasing_id() as __sb_pos
           {%- for c in cols %}, {{ c }} as __sb_sort_{{ loop.index0 }}{% endfor %}
    from {{ relation }}
  ),
  __sb_unsorted_{{ g }} as (
    select __sb_file, count_if({{ spark_bucketing.out_of_order_expr(range(cols | length) | list) }}) as __sb_unsorted
    from (
      select *, lag(1) over __sb_w is not null as __sb_has_prev
        {%- for c in cols %}, lag(__sb_sort_{{ loop.index0 }}) over __sb_w as __sb_prev_{{ loop.index0 }}{% endfor %}
      from __sb_sort_rows_{{ g }}
      window __sb_w as (partition by __sb_file order by __sb_block, __sb_pos)
    ) as __sb_lagged
    group by __sb_file
  ),
  {%- endfor %}
  __sb_named as (
    select *, {{ spark_bucketing.partition_path_expr('directory', partition_by | length) }} as __sb_path
    from (
      select *, {{ spark_bucketing.file_dir_expr('__sb_file') }} as directory,
             try_cast(nullif(regexp_extract(__sb_file, '{{ file_bucket_pattern }}', 1), '') as int) as file_bucket
      from __sb_counts
    ) as __sb_parsed
  ),
  __sb_specs as (
    select *,
      case
        {%- for spec, paths in groups %}
        when {{ spark_bucketing.paths_predicate(paths) }} then {{ loop.index0 }}
        {%- endfor %}
      end as spec_group
    from __sb_named
  ),
  __sb_per_file as (
    select __sb_file, directory, __sb_path, file_bucket, spec_group
           {%- for p in partition_by %}, max(__sb_p{{ loop.index0 }}) as __sb_p{{ loop.index0 }}{% endfor %},
           sum(__sb_listed) as row_count,
           sum(__sb_n) as checked_rows,
           sum(case
             when __sb_n = 0 then 0
             {%- for spec, _ in groups %}
             when spec_group = {{ loop.index0 }} and __sb_b{{ loop.index0 }} <=> file_bucket then 0
             {%- endfor %}
             else __sb_n
           end) as misplaced_rows
    from __sb_specs
    group by __sb_file, directory, __sb_path, file_bucket, spec_group
  ),
  __sb_files as (
    select f.__sb_file as file_path, f.directory, f.__sb_path as partition_path, f.file_bucket, f.row_count,
           f.spec_group
           {%- for p in partition_by %}, f.__sb_p{{ loop.index0 }}{% endfor %},
           case
             {%- for spec, _ in groups %}
             when f.spec_group = {{ loop.index0 }} then {{ spec.buckets }}
             {%- endfor %}
           end as buckets,
           f.checked_rows, f.misplaced_rows,
           {%- if sort_groups %}
           coalesce(case
             {%- for g in sort_groups %}
             when f.spec_group = {{ g }} then u{{ g }}.__sb_unsorted
             {%- endfor %}
           end, 0)
           {%- else %}
           0
           {%- endif %} as unsorted_rows
    from __sb_per_file as f
    {%- for g in sort_groups %}
    left join __sb_unsorted_{{ g }} as u{{ g }} on u{{ g }}.__sb_file = f.__sb_file
    {%- endfor %}
  ),
  __sb_checked as (
    select *,
      case
        when buckets is null then 'no bucket spec is recorded or declared for partition ' || partition_path
        when file_bucket is null then 'file name carries no bucket id'
        when file_bucket >= buckets then 'bucket id ' || file_bucket || ' >= bucket count ' || buckets
        when files_for_bucket > 1 then files_for_bucket || ' files for bucket ' || file_bucket || ' in ' || directory
        when checked_rows != row_count then (row_count - checked_rows) || ' of ' || row_count || ' rows were not read by the check'
        when misplaced_rows > 0 then misplaced_rows || ' of ' || row_count || ' rows belong to other buckets'
        when unsorted_rows > 0 then unsorted_rows || ' rows out of sorted_by order'
      end as problem
    from (
      select *, count(*) over (partition by directory, file_bucket) as files_for_bucket
      from __sb_files
    ) as __sb_counted
  )
  {%- if output == 'partitions' %}
  select directory, partition_path, count(*) as files, sum(row_count) as row_count,
         count(problem) as problems,
         concat_ws('\n', slice(collect_list(file_path || ': ' || problem), 1, 20)) as problem_lines
         {%- for p in partition_by %}, max(__sb_p{{ loop.index0 }}) as __sb_p{{ loop.index0 }}{% endfor %}
  from __sb_checked
  group by directory, partition_path
  {%- else %}
  select file_path, partition_path, file_bucket, row_count, misplaced_rows, unsorted_rows, files_for_bucket, problem
  from __sb_checked
  where problem is not null
  order by file_path
  {%- endif %}
{%- endmacro %}

{% macro paths_predicate(paths) -%}
  {%- if paths is none -%}true
  {%- else -%}__sb_path in ({% for p in paths %}{{ spark_bucketing.sql_string(p) }}{{ ', ' if not loop.last }}{% endfor %})
  {%- endif -%}
{%- endmacro %}

{% macro check_groups(relation, groups) %}
  {#- Fails when there is no spec to check `relation` against; registers the
      Hive hash function if a group needs it. -#}
  {%- if not groups -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: " ~ relation ~ " has no bucket spec: the catalog declares none and no spark_bucketing metadata is recorded") -%}
  {%- endif -%}
  {%- for spec, _ in groups if spec.hash == 'hive' -%}
    {%- if loop.first -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- endfor -%}
  {{ return(groups) }}
{% endmacro %}

{% macro layout_violations(relation, info=none, meta=none) %}
  {#- The offending files of `relation` (an agate table, empty when sound). -#}
  {%- set info = info or spark_bucketing.table_info(relation) -%}
  {%- set meta = meta or spark_bucketing.read_metadata(relation) -%}
  {%- set groups = spark_bucketing.check_groups(relation, spark_bucketing.expected_specs(info, meta)) -%}
  {{ return(run_query(spark_bucketing.layout_sql(relation, info.partition_by, groups))) }}
{% endmacro %}

{% macro checked_stats(relation, spec) %}
  {#- A new write's check and its partition stats from one query:
      {'stats': [partition_stats entries], 'problems': count, 'lines': [file: problem]}. -#}
  {%- set groups = spark_bucketing.check_groups(relation, [(spark_bucketing.spec_record(spec), none)]) -%}
  {%- set out = {'stats': [], 'problems': 0, 'lines': []} -%}
  {%- for row in run_query(spark_bucketing.layout_sql(relation, spec.partition_by, groups, 'partitions')) -%}
    {%- set values = {} -%}
    {%- for p in spec.partition_by -%}{%- do values.update({p: row['__sb_p' ~ loop.index0]}) -%}{%- endfor -%}
    {%- do out.stats.append({'path': row['partition_path'], 'location': row['directory'], 'files': row['files'] | int,
                             'rows': row['row_count'] | int, 'values': values}) -%}
    {%- do out.update({'problems': out.problems + row['problems'] | int}) -%}
    {%- if row['problem_lines'] -%}{%- do out.lines.extend(row['problem_lines'].split('\n')) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro describe_violations(violations, limit=20) %}
  {%- set lines = [] -%}
  {%- for row in violations[:limit] -%}
    {%- do lines.append('  ' ~ row['file_path'] ~ ': ' ~ row['problem']) -%}
  {%- endfor -%}
  {%- if violations | length > limit -%}{%- do lines.append('  ... and ' ~ (violations | length - limit) ~ ' more files') -%}{%- endif -%}
  {{ return(lines | join('\n')) }}
{% endmacro %}
