{#- The layout check, run: against a table's recorded or declared specs (the
    bucket_layout and bucket_metadata tests), or against the spec of a write
    this run made (before it is published). -#}

{% macro check_groups(relation, groups) %}
  {#- Fails when there is no spec to check `relation` against; registers the
      Hive hash function if a group needs it, and fails clearly where a group
      needs Hive's v2 hash and the session has not loaded the extension
      whose function computes it. -#}
  {%- if not groups -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: " ~ relation ~ " has no bucket spec: the catalog declares none and no spark_bucketing metadata is recorded") -%}
  {%- endif -%}
  {%- for spec, _ in groups if spec.hash == 'hive' -%}
    {%- if loop.first -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- endfor -%}
  {%- for spec, _ in groups if spark_bucketing.bucketing_version(spec) == 2 -%}
    {%- if loop.first and not spark_bucketing.extension_loaded() -%}
      {%- do exceptions.raise_compiler_error("spark_bucketing: " ~ relation ~ " is bucketed with Hive's bucketing v2 hash, which only the"
          ~ " spark-bucketing session extension computes in Spark: load it (spark.sql.extensions=" ~ spark_bucketing.extension_class()
          ~ " and its jar; `spark-bucketing extension` prints the settings) to check the table's layout") -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(groups) }}
{% endmacro %}

{% macro checked_layout(relation, partition_by, groups, other=none, listing=true, reads='rows', rows=none) %}
  {#- Runs the check on `relation` against `groups`: layout_report()'s
      result, plus 'other': the partition stats of `other` (see layout_sql).
      `rows`: the result of that query, run already (write_check_sql). -#}
  {%- set rows = rows if rows is not none else run_query(spark_bucketing.layout_sql(relation, partition_by, groups, other, listing, reads)) -%}
  {%- set checked, listed = spark_bucketing.split_other(rows) -%}
  {%- set report = spark_bucketing.layout_report(checked, partition_by, groups) -%}
  {%- do report.update({'other': spark_bucketing.folder_stats(listed, partition_by, '__sb_listed')}) -%}
  {{ return(report) }}
{% endmacro %}

{% macro layout_violations(relation, info=none, meta=none, max_files=none) %}
  {#- The offending files of `relation` (file_path, partition_path, file_bucket,
      row_count, misplaced_rows, unsorted_rows, files_for_bucket, problem),
      empty when sound. `max_files`: files a bucket may have per partition
      (a table another writer wrote: Hive's `_copy_N`), beyond what the
      records allow. -#}
  {%- set info = info or spark_bucketing.table_info(relation) -%}
  {%- set meta = meta or spark_bucketing.read_metadata(relation) -%}
  {%- set expected = spark_bucketing.expected_specs(info, meta) -%}
  {%- for spec, _ in expected if max_files is not none and max_files > spec.get('max_files_per_bucket', 1) -%}
    {%- do spec.update({'max_files_per_bucket': max_files}) -%}
  {%- endfor -%}
  {%- set groups = spark_bucketing.check_groups(relation, expected) -%}
  {%- set report = spark_bucketing.checked_layout(relation, info.partition_by, groups) -%}
  {{ return(report.files | rejectattr('problem', 'none') | list) }}
{% endmacro %}

{% macro write_check_sql(relation, spec, reads, other=none) %}
  {#- The query checked_stats runs on a write this run made; a statement
      that writes and checks at once runs it too (write_bucketed_folder's
      `then`). -#}
  {{ return(spark_bucketing.layout_sql(relation, spec.partition_by, [(spark_bucketing.spec_record(spec), none)], other, false, reads)) }}
{% endmacro %}

{% macro checked_stats(relation, spec, other=none, reads='rows', rows=none) %}
  {#- The check of a write this run made, and its partition stats, from
      one query: {'stats': [folder_stats entries], 'problems': count,
      'lines': [file: problem], 'other': [folder_stats entries of `other`]}.
      `reads` other than 'rows': the files' structure only (check_reads).
      `rows`: the result of write_check_sql, run with the write. -#}
  {%- set groups = [(spark_bucketing.spec_record(spec), none)] -%}
  {%- if reads == 'rows' -%}{%- do spark_bucketing.check_groups(relation, groups) -%}{%- endif -%}
  {%- set rows = rows if rows is not none else run_query(spark_bucketing.write_check_sql(relation, spec, reads, other)) -%}
  {%- set report = spark_bucketing.checked_layout(relation, spec.partition_by, groups, rows=rows) -%}
  {%- set out = {'stats': [], 'problems': 0, 'lines': [], 'other': report.other} -%}
  {%- for part in report.partitions -%}
    {%- do out.stats.append({'path': part.path, 'location': part.location, 'files': part.files, 'rows': part.rows, 'values': part['values']}) -%}
    {%- do out.update({'problems': out.problems + part.problems}) -%}
    {%- do out.lines.extend(part.lines) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}
