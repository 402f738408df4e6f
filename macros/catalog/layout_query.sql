{#- The layout check's one read. Recomputes every row's bucket with the spec
    its partition should follow; layout_report.sql reads the result. It
    changes no session setting. -#}

{% macro bucket_file_pattern(family='spark') %}
  {#- The bucket id in a data file's path as the table's readers read it:
      Spark's (BucketingUtils), the last `_<digits>` of its name before the
      extensions; a Hive-hash table's (Hive, Trino, the session extension's
      foreign tables), the leading number of `000003_0`, `000003_0_copy_1`,
      Trino's `000003_0_<query>_<uuid>` and Spark's Hive-style names. Tied
      to BUCKET_IN_NAME and HIVE_BUCKET_IN_NAME in spark_bucketing/contracts.py
      by tests/test_contracts.py. -#}
  {%- if family == 'hive' -%}{{ return('^.*/(0[0-9]+)_[0-9]+[^/]*$') }}{%- endif -%}
  {{ return('^.*/[^/]*_([0-9]+)([.][^/]*)?$') }}
{% endmacro %}

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

{% macro listed_files_sql(files_sql, partition_by, groups, is_other) -%}
  {#- layout_sql's rows for the files of `files_sql`: their rows as listed, none counted. -#}
    select __sb_file
      {%- for p in partition_by %}, __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %}, cast(null as int) as __sb_b{{ loop.index0 }}{% endfor %},
      __sb_rows as __sb_listed, cast(0 as bigint) as __sb_n, cast(null as int) as __sb_sort_group, cast(0 as bigint) as __sb_unsorted,
      {{ is_other }} as __sb_other
    from ({{ files_sql }}) as __sb_listing
{%- endmacro %}

{% macro footer_files_sql(folder, partition_by, groups, listing) -%}
  {#- counted_files_sql's rows of a bucketed folder (write_folder's
      description) from its files' footers: a row per file, its computed
      buckets NULL. -#}
    select __sb_file
      {%- for p in partition_by %}, __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %}, cast(null as int) as __sb_b{{ loop.index0 }}{% endfor %},
      {{ 'cast(0 as bigint)' if listing else '__sb_rows' }} as __sb_listed, __sb_rows as __sb_n, cast(null as int) as __sb_sort_group, cast(0 as bigint) as __sb_unsorted,
      false as __sb_other
    from ({{ spark_bucketing.folder_files_sql(folder, partition_by) }}) as __sb_footers
{%- endmacro %}

{% macro counted_files_sql(relation, partition_by, groups, listing, reads='rows') -%}
  {#- layout_sql's rows per (file, computed bucket of each spec group),
      aggregated in the scan's stage. `reads` (layout_sql) other than
      'rows': per file, the computed buckets NULL (no data column read);
      'footers': `relation` is a bucketed folder (write_folder). -#}
  {%- if reads == 'footers' -%}{{ return(spark_bucketing.footer_files_sql(relation, partition_by, groups, listing)) }}{%- endif -%}
  {%- set rehash = reads == 'rows' -%}
    select input_file_name() as __sb_file
      {%- for p in partition_by %}, cast({{ spark_bucketing.quoted([p])[0] }} as string) as __sb_p{{ loop.index0 }}{% endfor %}
      {%- for spec, _ in groups %},
      {{ spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, spec.hash, spark_bucketing.bucketing_version(spec)) if rehash else 'cast(null as int)' }} as __sb_b{{ loop.index0 }}
      {%- endfor %},
      {{ 'cast(0 as bigint)' if listing else 'count(*)' }} as __sb_listed, count(*) as __sb_n, cast(null as int) as __sb_sort_group, cast(0 as bigint) as __sb_unsorted,
      false as __sb_other
    from {{ relation }}
    group by all
{%- endmacro %}

{% macro unsorted_files_sql(relation, partition_by, groups, g) -%}
  {#- layout_sql's rows per file with the rows out of group `g`'s sorted_by
      order: a window per file (a sort of the sort columns). -#}
  {%- set cols = spark_bucketing.quoted(groups[g][0].sorted_by) -%}
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
{%- endmacro %}

{% macro layout_sql(relation, partition_by, groups, other=none, listing=true, reads='rows') -%}
  {#- The check's one read: a listing of every file with its rows by a scan
      that reads no data column (files_sql: Spark never plans it as a
      bucketed scan, so it lists even a file a bucketed scan would skip), and
      the rows per (file, computed bucket of each spec group). Both are
      aggregated in the scan's stage (one shuffle each, side by side), with
      no string work per row: file names are parsed on the aggregated rows.
      `listing=false` leaves the listing out, for a write this run made: its
      folder holds only files Spark's writer named, which every scan reads,
      so the rows counted are the rows listed. With sorted_by, a window per
      file counts rows out of order. `other`, a files_sql of another table's
      partitions, is listed in the same query (rows with __sb_other true), so
      that a run learns the folders it replaces without a job of its own.
      `reads`: 'rows' recomputes every row's bucket and checks the sort;
      'files' (a write whose buckets and order Spark's writer makes,
      check_recomputes_buckets) the structure only, the rows per file
      counted by a scan that reads no data column; 'footers' the same, the
      rows per file from the files' footers (footer_files_sql), of a bucketed
      folder (write_folder's description) given as `relation`. -#}
  {%- set parts = [spark_bucketing.counted_files_sql(relation, partition_by, groups, listing, reads)] -%}
  {%- if listing -%}
    {%- do parts.append(spark_bucketing.listed_files_sql(spark_bucketing.files_sql(relation, partition_by), partition_by, groups, 'false')) -%}
  {%- endif -%}
  {%- if other is not none -%}
    {%- do parts.append(spark_bucketing.listed_files_sql(other, partition_by, groups, 'true')) -%}
  {%- endif -%}
  {#- Indexes into `groups` (a filtered loop would renumber them). -#}
  {%- for spec, _ in groups -%}
    {%- if spec.sorted_by and reads == 'rows' -%}{%- do parts.append(spark_bucketing.unsorted_files_sql(relation, partition_by, groups, loop.index0)) -%}{%- endif -%}
  {%- endfor -%}
  {%- set all_rows = parts | join('\n    union all\n') -%}
  {#- Files are named as their readers read them: Spark's rule where any group is of Spark's hash. -#}
  {%- set family = namespace(name='hive' if groups else 'spark') -%}
  {%- for spec, _ in groups if spec.hash != 'hive' -%}{%- set family.name = 'spark' -%}{%- endfor -%}
  select try_cast(nullif(regexp_extract(__sb_file, '{{ spark_bucketing.bucket_file_pattern(family.name) }}', 1), '') as int) as __sb_file_bucket, *
  from ({{ spark_bucketing.with_folders_sql(all_rows, partition_by | length) }}) as __sb_named
{%- endmacro %}
