{#- Checks of a new write before anything is published. A write that fails
    one is discarded (entry and files) and the run fails. -#}

{% macro discard(written, location, rels, message) %}
  {#- Drops an unpublished write (`written`: verify_write; its side table,
      if it has one, and its files, and the run's staged new rows where it
      staged them: publish_partitions) and fails the run. -#}
  {%- if written.relation is not none -%}{%- do adapter.drop_relation(written.relation) -%}{%- endif -%}
  {%- set staged = written.get('staged') -%}
  {%- if staged is not none and staged.relation is not none -%}{%- do adapter.drop_relation(staged.relation) -%}{%- endif -%}
  {%- do spark_bucketing.delete_locations([location] + ([written.stage_location] if staged is not none else []), rels.scratch) -%}
  {%- do spark_bucketing.model_error(message) -%}
{% endmacro %}

{% macro check_recomputes_buckets(spec, folder) %}
  {#- Whether the check of a new write recomputes each row's bucket, or
      checks the files' structure only (names, one file per bucket per
      partition, row counts). Spark's writer computes each row's bucket and
      names its file by it, and sorts each file by sorted_by. For the Spark
      hash, the bucket it computes is the reader's by definition (one
      Murmur3 expression), so only the structure can break and recomputing
      would check Spark against itself. For the Hive hash, recomputing with
      Hive's own function checks Spark's against Hive's: a Hive v1 `folder`
      (write_bucketed_folder) had each row checked so as it was written,
      a side table's write has not. A Hive v2 `folder`'s rows were placed by
      the extension's v2 hash, the very function that defines a v2 bucket
      here (bucket_id_expr), so as for the Spark hash only the structure
      can break. verify_layout='rows' recomputes for every write. -#}
  {{ return(spec.verify_layout == 'rows' or (spec.bucket_hash == 'hive' and not folder)) }}
{% endmacro %}

{% macro check_reads(spec, folder) %}
  {#- What the check of a new write reads (layout_sql's `reads`): 'rows'
      where it recomputes buckets; else each file's rows, from its footer
      through the session extension where the write is a bucketed `folder`
      with no catalog entry (write_folder: the extension lists it and reads
      the footers while the query is planned, no Spark job), or counted by a
      scan that reads no data column (a job: about 1.3 s of a one-day run
      in a fresh JVM). -#}
  {%- if spark_bucketing.check_recomputes_buckets(spec, folder) -%}{{ return('rows') }}{%- endif -%}
  {{ return('footers' if folder else 'files') }}
{% endmacro %}

{% macro folder_check_sql(spec, columns, location) %}
  {#- The query verify_write runs on the bucketed folder at `location`
      (bucketed_folder) once written, where the check reads the files'
      footers (check_reads), for the write to run in the same statement
      (write_bucketed_folder's `then`): a round trip saved. Else none. -#}
  {%- if spec.verify_layout and spark_bucketing.check_reads(spec, true) == 'footers' -%}
    {{ return(spark_bucketing.write_check_sql(spark_bucketing.bucketed_folder(spec, columns, location), spec, 'footers')) }}
  {%- endif -%}
  {{ return(none) }}
{% endmacro %}

{% macro verify_write(written, spec, location, rels, other=none) %}
  {#- Checks a new write (unless verify_layout is false) and returns its
      partition stats, both from one query: {'stats': [...], 'other': the
      partition stats of `other`, a files_sql listed by the same query}. A
      write that breaks its layout is discarded and fails the run.
      `written`: {'relation': the side table written, or none, 'folder': the
      bucketed folder written (write_folder's description), or none,
      'check': the check's rows where the write ran it (folder_check_sql)}. -#}
  {%- set source = written.folder if written.folder is not none else written.relation -%}
  {%- if not spec.verify_layout -%}
    {%- set listing -%}
      select *, false as __sb_other from ({{ spark_bucketing.folder_files_sql(source, spec.partition_by) if written.folder is not none
                                            else spark_bucketing.files_sql(source, spec.partition_by) }}) as __sb_new
      {%- if other is not none %}
      union all
      select *, true as __sb_other from ({{ other }}) as __sb_old
      {%- endif %}
    {%- endset -%}
    {%- set new_rows, listed = spark_bucketing.split_other(run_query(spark_bucketing.with_folders_sql(listing, spec.partition_by | length))) -%}
    {{ return({'stats': spark_bucketing.folder_stats(new_rows, spec.partition_by), 'other': spark_bucketing.folder_stats(listed, spec.partition_by)}) }}
  {%- endif -%}
  {%- set reads = spark_bucketing.check_reads(spec, written.folder is not none) -%}
  {#- A folder's rows are read through the extension's table function. -#}
  {%- set source = spark_bucketing.folder_source(written.folder) if written.folder is not none and reads == 'rows' else source -%}
  {%- set checked = spark_bucketing.checked_stats(source, spec, other, reads, written.get('check') if other is none else none) -%}
  {%- if checked.problems > 0 -%}
    {%- set more = checked.problems - checked.lines | length -%}
    {%- set dates = spark_bucketing.v1_date_keys(spec, written) -%}
    {%- do spark_bucketing.discard(written, location, rels,
        "the new data broke its bucket layout in " ~ checked.problems
        ~ " files, so it was discarded and the table left as it was:\n  " ~ (checked.lines | join('\n  '))
        ~ ('\n  ... and ' ~ more ~ ' more files' if more > 0 else '')
        ~ ('\n  The bucket column ' ~ (dates | join(', ')) ~ " is a date: Hive's v1 hash, which routes and checks"
           ~ " the rows, counts a date before 1582-10-15 (such as 0001-01-01) as a Julian day, and Spark's writer"
           ~ " (like Hive 4 and Trino) as a Gregorian one, so its rows land in two buckets' files. Keep such dates"
           ~ " out of the bucket columns, or set bucketing_version=2 (docs/configs.md)." if dates else '')) -%}
  {%- endif -%}
  {{ return(checked) }}
{% endmacro %}

{% macro v1_date_keys(spec, written) %}
  {#- The bucket columns of a Hive v1 write that are dates (read only where a
      write broke its layout, to say why it may have): Hive's own classes
      hash a date before 1582-10-15 as a Julian day, Spark's writer as a
      Gregorian one (docs/configs.md). -#}
  {%- if spec.bucket_hash != 'hive' or spec.get('bucketing_version', 1) == 2 -%}{{ return([]) }}{%- endif -%}
  {%- set types = {} -%}
  {%- if written.folder is not none -%}
    {%- for name, data_type in written.folder.columns -%}{%- do types.update({name | lower: data_type | lower}) -%}{%- endfor -%}
  {%- elif written.relation is not none -%}
    {%- for c in adapter.get_columns_in_relation(written.relation) -%}{%- do types.update({c.name | lower: c.data_type | lower}) -%}{%- endfor -%}
  {%- endif -%}
  {%- set dates = [] -%}
  {%- for c in spec.clustered_by if types.get(c | lower) == 'date' -%}{%- do dates.append(c) -%}{%- endfor -%}
  {{ return(dates) }}
{% endmacro %}

{% macro check_side_partitions(written, rels, location, stats, listed) %}
  {#- Every written partition has non-NULL values; each folder its files are
      in is `location`/<its name>, the folder Spark wrote it to; and a side
      table's catalog (`listed`; none for a bucketed folder, which has no
      catalog entry) lists exactly those folders. So the location the switch
      gives a partition is the folder this check and the layout check read:
      read through the table after the switch, it shows the files and rows
      checked here. -#}
  {%- for s in stats if none in s['values'].values() -%}
    {%- do spark_bucketing.discard(written, location, rels,
        "the new rows have a NULL partition value (" ~ s.path ~ "); bucketed_incremental needs non-NULL partition columns. Fix: coalesce them in the model") -%}
  {%- endfor -%}
  {%- for s in stats if not spark_bucketing.same_location(s.location, location ~ '/' ~ s.path) -%}
    {%- do spark_bucketing.discard(written, location, rels,
        "a written partition's files are in " ~ s.location ~ ", not in " ~ location ~ "/" ~ s.path
        ~ " where its partition's name puts it; nothing was published. Please report this with the partition values") -%}
  {%- endfor -%}
  {%- if listed is not none -%}
    {%- set listed = listed.keys() | sort(case_sensitive=true) -%}
    {%- set found = stats | map(attribute='path') | sort(case_sensitive=true) -%}
    {%- if listed != found -%}
      {%- do spark_bucketing.discard(written, location, rels,
          "the written partition folders " ~ found ~ " differ from the partitions the catalog lists for them " ~ listed
          ~ "; nothing was published. Please report this with the partition values") -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}

{% macro check_row_accounting(written, location, rels, partition_by, stats, accounting) %}
  {#- merge_row_accounting: each partition the merge wrote (or emptied) holds
      the rows its accounting expects. -#}
  {%- set by_key = {} -%}
  {%- for s in stats -%}{%- do by_key.update({spark_bucketing.values_key(s['values'], partition_by): s}) -%}{%- endfor -%}
  {%- set wrong = [] -%}
  {%- for key in (accounting.keys() | list + by_key.keys() | list) | unique | sort -%}
    {%- set a = accounting.get(key) -%}
    {%- set expected = a.rows_after if a is not none else 0 -%}
    {%- set found = by_key[key].rows if key in by_key else 0 -%}
    {%- if expected != found -%}
      {%- set name = by_key[key].path if key in by_key else (key if partition_by else 'the table') -%}
      {%- do wrong.append(name ~ ': ' ~ (spark_bucketing.accounting_text(a) if a is not none else 'no rows expected')
          ~ ', but ' ~ found ~ ' rows were written') -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if wrong -%}
    {%- do spark_bucketing.discard(written, location, rels, "merge_row_accounting: the merged rows do not add up in "
        ~ (wrong | length) ~ " partitions, so nothing was published:\n  " ~ (wrong[:20] | join('\n  '))) -%}
  {%- endif -%}
{% endmacro %}
