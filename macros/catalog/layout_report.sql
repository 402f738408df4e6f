{#- Reading the layout check's rows (layout_sql): per file, the problem with
    it; per partition folder, its stats and problems. -#}

{% macro expected_specs(info, meta) %}
  {#- [(spec record, [partition paths] or none for "every partition")]: the
      recorded spec of each partition where metadata exists, else the spec
      the catalog declares. -#}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- if meta.table -%}{{ return([(meta.table, none)]) }}{%- endif -%}
  {%- if not meta.partitions -%}{{ return([(declared, none)] if declared else []) }}{%- endif -%}
  {%- set groups = [] -%}
  {%- for path, rec in meta.partitions | dictsort -%}
    {%- set found = namespace(done=false) -%}
    {%- for spec, paths in groups if not found.done and spark_bucketing.same_spec(spec, rec) -%}
      {%- do paths.append(path) -%}{%- set found.done = true -%}
      {#- A group allows the most files per bucket any of its records allows. -#}
      {%- if rec.get('max_files_per_bucket', 1) > spec.get('max_files_per_bucket', 1) -%}
        {%- do spec.update({'max_files_per_bucket': rec.max_files_per_bucket}) -%}
      {%- endif -%}
    {%- endfor -%}
    {%- if not found.done -%}{%- do groups.append((rec.copy(), [path])) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(groups) }}
{% endmacro %}

{% macro group_index(groups) %}
  {#- ({partition path: index of its group}, index of the group for every other partition or none). -#}
  {%- set group_of = {} -%}
  {%- set default = namespace(g=none) -%}
  {%- for spec, paths in groups -%}
    {%- set g = loop.index0 -%}
    {%- if paths is none -%}{%- set default.g = g if default.g is none else default.g -%}
    {%- else -%}
      {%- for path in paths if path not in group_of -%}{%- do group_of.update({path: g}) -%}{%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return((group_of, default.g)) }}
{% endmacro %}

{% macro layout_files(rows, partition_by) %}
  {#- layout_sql's rows gathered per file: {file: {file_path, directory, partition_path,
      file_bucket, values, row_count, checked_rows, counts: [rows], unsorted: {group: rows}}}. -#}
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
  {{ return(files) }}
{% endmacro %}

{% macro file_check(f, g, spec, same_bucket) %}
  {#- One file (layout_files) against the spec of its group `g`: its entry in layout_report's 'files'. -#}
  {%- set misplaced = namespace(n=0) -%}
  {#- A NULL computed bucket: not recomputed (layout_sql's `reads`). -#}
  {%- for row in f.counts if g is none or (row['__sb_b' ~ g] is not none and row['__sb_b' ~ g] != f.file_bucket) -%}
    {%- set misplaced.n = misplaced.n + row['__sb_n'] | int -%}
  {%- endfor -%}
  {%- set unsorted = f.unsorted.get(g, 0) -%}
  {%- if spec is none -%}{%- set problem = 'no bucket spec is recorded or declared for partition ' ~ f.partition_path -%}
  {%- elif f.file_bucket is none -%}{%- set problem = 'file name carries no bucket id' -%}
  {%- elif f.file_bucket >= spec.buckets -%}{%- set problem = 'bucket id ' ~ f.file_bucket ~ ' >= bucket count ' ~ spec.buckets -%}
  {%- elif same_bucket > spec.get('max_files_per_bucket', 1) -%}
    {%- set problem = same_bucket ~ ' files for bucket ' ~ f.file_bucket ~ ' in ' ~ f.directory
        ~ (' (at most ' ~ spec.max_files_per_bucket ~ ' recorded)' if spec.get('max_files_per_bucket', 1) > 1 else '') -%}
  {%- elif f.checked_rows != f.row_count -%}{%- set problem = (f.row_count - f.checked_rows) ~ ' of ' ~ f.row_count ~ ' rows were not read by the check' -%}
  {%- elif misplaced.n > 0 -%}{%- set problem = misplaced.n ~ ' of ' ~ f.row_count ~ ' rows belong to other buckets' -%}
  {%- elif unsorted > 0 -%}{%- set problem = unsorted ~ ' rows out of sorted_by order' -%}
  {%- else -%}{%- set problem = none -%}
  {%- endif -%}
  {{ return({'file_path': f.file_path, 'partition_path': f.partition_path, 'file_bucket': f.file_bucket,
             'row_count': f.row_count, 'misplaced_rows': misplaced.n, 'unsorted_rows': unsorted,
             'files_for_bucket': same_bucket, 'problem': problem}) }}
{% endmacro %}

{% macro layout_report(rows, partition_by, groups) %}
  {#- {'files': one entry per file with its problem (none when sound),
       'partitions': one entry per partition folder with its stats
       (folder_stats' shape) and problems}. A file follows the spec of the
      group that names its partition (or the group for every partition). -#}
  {%- set group_of, default = spark_bucketing.group_index(groups) -%}
  {%- set files = spark_bucketing.layout_files(rows, partition_by) -%}
  {%- set per_bucket = {} -%}
  {%- for f in files.values() -%}
    {%- set key = (f.directory, f.file_bucket) -%}
    {%- do per_bucket.update({key: per_bucket.get(key, 0) + 1}) -%}
  {%- endfor -%}
  {%- set partitions = {} -%}
  {%- set out = [] -%}
  {%- for path_key in files | sort(case_sensitive=true) -%}
    {%- set f = files[path_key] -%}
    {%- set g = group_of.get(f.partition_path, default) -%}
    {%- set checked = spark_bucketing.file_check(f, g, groups[g][0] if g is not none else none, per_bucket[(f.directory, f.file_bucket)]) -%}
    {%- do out.append(checked) -%}
    {%- set part = partitions.get(f.directory) -%}
    {%- if part is none -%}
      {%- set part = {'path': f.partition_path, 'location': f.directory, 'files': 0, 'rows': 0, 'values': f['values'], 'problems': 0, 'lines': []} -%}
      {%- do partitions.update({f.directory: part}) -%}
    {%- endif -%}
    {%- do part.update({'files': part.files + 1, 'rows': part.rows + f.row_count}) -%}
    {%- if checked.problem is not none -%}
      {%- do part.update({'problems': part.problems + 1}) -%}
      {%- if part.lines | length < 20 -%}{%- do part.lines.append(f.file_path ~ ': ' ~ checked.problem) -%}{%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return({'files': out, 'partitions': partitions.values() | list}) }}
{% endmacro %}

{% macro describe_violations(violations, limit=20) %}
  {%- set lines = [] -%}
  {%- for row in violations[:limit] -%}
    {%- do lines.append('  ' ~ row['file_path'] ~ ': ' ~ row['problem']) -%}
  {%- endfor -%}
  {%- if violations | length > limit -%}{%- do lines.append('  ... and ' ~ (violations | length - limit) ~ ' more files') -%}{%- endif -%}
  {{ return(lines | join('\n')) }}
{% endmacro %}
