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

{% macro listed_files_sql(files_sql, partition_by, groups, is_other) -%}
  {#- layout_sql's rows for the files of `files_sql`: their rows as listed, none counted. -#}
    select __sb_file
      {%- for p in partition_by %}, __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %}, cast(null as int) as __sb_b{{ loop.index0 }}{% endfor %},
      __sb_rows as __sb_listed, cast(0 as bigint) as __sb_n, cast(null as int) as __sb_sort_group, cast(0 as bigint) as __sb_unsorted,
      {{ is_other }} as __sb_other
    from ({{ files_sql }}) as __sb_listing
{%- endmacro %}

{% macro layout_sql(relation, partition_by, groups, other=none, listing=true) -%}
  {#- The check's one read: a listing of every file with its rows by a scan
      that reads no data column (files_sql: Spark never plans it as a
      bucketed scan, so it lists even a file a bucketed scan would skip), and
      the rows per (file, computed bucket of each spec group). Both are
      aggregated in the scan's stage (one shuffle each, side by side), with
      no string work per row: file names are parsed on the aggregated rows.
      `listing=false` leaves the listing out, for a write this run made: its
      folder holds only files Spark's writer named, which every scan reads,
      so the rows counted are the rows listed.
      With sorted_by, a window per file counts rows out of order (a sort of
      the sort columns). `other`, a files_sql of another table's partitions,
      is listed in the same query (rows with __sb_other true), so that a run
      learns the folders it replaces without a job of its own.
      layout_report() reads the result. -#}
  {%- set sort_groups = [] -%}
  {#- Indexes into `groups` (a filtered loop would renumber them). -#}
  {%- for spec, _ in groups -%}{%- if spec.sorted_by -%}{%- do sort_groups.append(loop.index0) -%}{%- endif -%}{%- endfor -%}
  {%- set file_bucket_pattern = '^.*/[^/]*_([0-9]+)([.][^/]*)?$' -%}
  with __sb_counts as (
    select input_file_name() as __sb_file
      {%- for p in partition_by %}, cast({{ spark_bucketing.quoted([p])[0] }} as string) as __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %},
      {{ spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, spec.hash) }} as __sb_b{{ loop.index0 }}
      {%- endfor %},
      {{ 'cast(0 as bigint)' if listing else 'count(*)' }} as __sb_listed, count(*) as __sb_n, cast(null as int) as __sb_sort_group, cast(0 as bigint) as __sb_unsorted,
      false as __sb_other
    from {{ relation }}
    group by all
    {%- if listing %}
    union all
    {{ spark_bucketing.listed_files_sql(spark_bucketing.files_sql(relation, partition_by), partition_by, groups, 'false') }}
    {%- endif %}
    {%- if other is not none %}
    union all
    {{ spark_bucketing.listed_files_sql(other, partition_by, groups, 'true') }}
    {%- endif %}
  )
  {%- for g in sort_groups %}
  {%- set cols = spark_bucketing.quoted(groups[g][0].sorted_by) %},
  __sb_unsorted_{{ g }} as (
    select __sb_file
      {%- for p in partition_by %}, cast(null as string) as __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %}, cast(null as int) as __sb_b{{ loop.index0 }}{% endfor %},
      cast(0 as bigint) as __sb_listed, cast(0 as bigint) as __sb_n, {{ g }} as __sb_sort_group,
      count_if({{ spark_bucketing.out_of_order_expr(range(cols | length) | list) }}) as __sb_unsorted,
      false as __sb_other
    from (
      select *, lag(1) over __sb_w is not null as __sb_has_prev
        {%- for c in cols %}, lag(__sb_sort_{{ loop.index0 }}) over __sb_w as __sb_prev_{{ loop.index0 }}{% endfor %}
      from (
        select input_file_name() as __sb_file, input_file_block_start() as __sb_block,
               monotonically_increasing_id() as __sb_pos
               {%- for c in cols %}, {{ c }} as __sb_sort_{{ loop.index0 }}{% endfor %}
        from {{ relation }}
      ) as __sb_sort_rows
      window __sb_w as (partition by __sb_file order by __sb_block, __sb_pos)
    ) as __sb_lagged
    group by __sb_file
  )
  {%- endfor %}
  {%- set all_rows -%}
    select * from __sb_counts
    {%- for g in sort_groups %}
    union all
    select * from __sb_unsorted_{{ g }}
    {%- endfor %}
  {%- endset %}
  select try_cast(nullif(regexp_extract(__sb_file, '{{ file_bucket_pattern }}', 1), '') as int) as __sb_file_bucket, *
  from ({{ spark_bucketing.with_folders_sql(all_rows, partition_by | length) }}) as __sb_named
{%- endmacro %}

{% macro layout_report(rows, partition_by, groups) %}
  {#- Reads layout_sql's rows: {'files': one entry per file with its problem
      (none when sound), 'partitions': one entry per partition folder with
      its stats (partition_stats' shape) and problems}. A file follows the
      spec of the group that names its partition (or the group for every
      partition). -#}
  {%- set group_of = {} -%}
  {%- set default = namespace(g=none) -%}
  {%- for spec, paths in groups -%}
    {%- set g = loop.index0 -%}
    {%- if paths is none -%}{%- set default.g = g if default.g is none else default.g -%}
    {%- else -%}
      {%- for path in paths if path not in group_of -%}{%- do group_of.update({path: g}) -%}{%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set files = {} -%}
  {%- for row in rows -%}
    {%- set f = files.get(row['__sb_file']) -%}
    {%- if f is none -%}
      {%- set f = {'file_path': row['__sb_file'], 'directory': row['__sb_dir'], 'partition_path': row['__sb_path'],
                   'file_bucket': row['__sb_file_bucket'], 'values': {}, 'row_count': 0, 'checked_rows': 0,
                   'counts': [], 'unsorted': {}} -%}
      {%- do files.update({row['__sb_file']: f}) -%}
    {%- endif -%}
    {%- if row['__sb_sort_group'] is not none -%}
      {%- do f.unsorted.update({row['__sb_sort_group'] | int: row['__sb_unsorted'] | int}) -%}
    {%- else -%}
      {%- for p in partition_by -%}{%- do f['values'].update({p: row['__sb_p' ~ loop.index0]}) -%}{%- endfor -%}
      {%- do f.update({'row_count': f.row_count + row['__sb_listed'] | int, 'checked_rows': f.checked_rows + row['__sb_n'] | int}) -%}
      {%- if row['__sb_n'] | int > 0 -%}{%- do f.counts.append(row) -%}{%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set per_bucket = {} -%}
  {%- for f in files.values() -%}
    {%- set key = (f.directory, f.file_bucket) -%}
    {%- do per_bucket.update({key: per_bucket.get(key, 0) + 1}) -%}
  {%- endfor -%}
  {%- set partitions = {} -%}
  {%- set out = [] -%}
  {%- for path_key in files | sort(case_sensitive=true) -%}
    {%- set f = files[path_key] -%}
    {%- set g = group_of.get(f.partition_path, default.g) -%}
    {%- set spec = groups[g][0] if g is not none else none -%}
    {%- set misplaced = namespace(n=0) -%}
    {%- for row in f.counts if g is none or row['__sb_b' ~ g] != f.file_bucket -%}
      {%- set misplaced.n = misplaced.n + row['__sb_n'] | int -%}
    {%- endfor -%}
    {%- set unsorted = f.unsorted.get(g, 0) -%}
    {%- set same_bucket = per_bucket[(f.directory, f.file_bucket)] -%}
    {%- if spec is none -%}{%- set problem = 'no bucket spec is recorded or declared for partition ' ~ f.partition_path -%}
    {%- elif f.file_bucket is none -%}{%- set problem = 'file name carries no bucket id' -%}
    {%- elif f.file_bucket >= spec.buckets -%}{%- set problem = 'bucket id ' ~ f.file_bucket ~ ' >= bucket count ' ~ spec.buckets -%}
    {%- elif same_bucket > 1 -%}{%- set problem = same_bucket ~ ' files for bucket ' ~ f.file_bucket ~ ' in ' ~ f.directory -%}
    {%- elif f.checked_rows != f.row_count -%}{%- set problem = (f.row_count - f.checked_rows) ~ ' of ' ~ f.row_count ~ ' rows were not read by the check' -%}
    {%- elif misplaced.n > 0 -%}{%- set problem = misplaced.n ~ ' of ' ~ f.row_count ~ ' rows belong to other buckets' -%}
    {%- elif unsorted > 0 -%}{%- set problem = unsorted ~ ' rows out of sorted_by order' -%}
    {%- else -%}{%- set problem = none -%}
    {%- endif -%}
    {%- do out.append({'file_path': f.file_path, 'partition_path': f.partition_path, 'file_bucket': f.file_bucket,
                       'row_count': f.row_count, 'misplaced_rows': misplaced.n, 'unsorted_rows': unsorted,
                       'files_for_bucket': same_bucket, 'problem': problem}) -%}
    {%- set part = partitions.get(f.directory) -%}
    {%- if part is none -%}
      {%- set part = {'path': f.partition_path, 'location': f.directory, 'files': 0, 'rows': 0, 'values': f['values'], 'problems': 0, 'lines': []} -%}
      {%- do partitions.update({f.directory: part}) -%}
    {%- endif -%}
    {%- do part.update({'files': part.files + 1, 'rows': part.rows + f.row_count}) -%}
    {%- if problem is not none -%}
      {%- do part.update({'problems': part.problems + 1}) -%}
      {%- if part.lines | length < 20 -%}{%- do part.lines.append(f.file_path ~ ': ' ~ problem) -%}{%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return({'files': out, 'partitions': partitions.values() | list}) }}
{% endmacro %}

{% macro checked_layout(relation, partition_by, groups, other=none, listing=true) %}
  {#- Runs the check on `relation` against `groups`: layout_report()'s
      result, plus 'other': the partition stats of `other` (see layout_sql). -#}
  {%- set checked, listed = spark_bucketing.split_other(run_query(spark_bucketing.layout_sql(relation, partition_by, groups, other, listing))) -%}
  {%- set report = spark_bucketing.layout_report(checked, partition_by, groups) -%}
  {%- do report.update({'other': spark_bucketing.folder_stats(listed, partition_by, '__sb_listed')}) -%}
  {{ return(report) }}
{% endmacro %}

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
  {#- The offending files of `relation` (file_path, partition_path, file_bucket,
      row_count, misplaced_rows, unsorted_rows, files_for_bucket, problem),
      empty when sound. -#}
  {%- set info = info or spark_bucketing.table_info(relation) -%}
  {%- set meta = meta or spark_bucketing.read_metadata(relation) -%}
  {%- set groups = spark_bucketing.check_groups(relation, spark_bucketing.expected_specs(info, meta)) -%}
  {%- set report = spark_bucketing.checked_layout(relation, info.partition_by, groups) -%}
  {{ return(report.files | rejectattr('problem', 'none') | list) }}
{% endmacro %}

{% macro checked_stats(relation, spec, other=none) %}
  {#- The check of a write this run made, and its partition stats, from
      one query: {'stats': [partition_stats entries], 'problems': count,
      'lines': [file: problem], 'other': [partition_stats entries of `other`]}. -#}
  {%- set groups = spark_bucketing.check_groups(relation, [(spark_bucketing.spec_record(spec), none)]) -%}
  {%- set report = spark_bucketing.checked_layout(relation, spec.partition_by, groups, other, listing=false) -%}
  {%- set out = {'stats': [], 'problems': 0, 'lines': [], 'other': report.other} -%}
  {%- for part in report.partitions -%}
    {%- do out.stats.append({'path': part.path, 'location': part.location, 'files': part.files, 'rows': part.rows, 'values': part['values']}) -%}
    {%- do out.update({'problems': out.problems + part.problems}) -%}
    {%- do out.lines.extend(part.lines) -%}
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
