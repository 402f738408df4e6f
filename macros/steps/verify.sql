{#- Checks of a new write before anything is published. A write that fails
    one is discarded (entry and files) and the run fails. -#}

{% macro discard(relation, location, rels, message) %}
  {#- Drops an unpublished write (entry and files) and fails the run. -#}
  {%- do adapter.drop_relation(relation) -%}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do spark_bucketing.model_error(message) -%}
{% endmacro %}

{% macro check_recomputes_buckets(spec) %}
  {#- Whether the check of a new write recomputes each row's bucket, or
      checks the files' structure only (names, one file per bucket per
      partition, row counts). Spark's writer computes each row's bucket and
      names its file by it, and sorts each file by sorted_by. For the Spark
      hash, the bucket it computes is the reader's by definition (one
      Murmur3 expression), so only the structure can break and recomputing
      would check Spark against itself. For the Hive hash, recomputing with
      Hive's own function checks Spark's against Hive's. verify_layout='rows'
      recomputes for both. -#}
  {{ return(spec.bucket_hash == 'hive' or spec.verify_layout == 'rows') }}
{% endmacro %}

{% macro check_reads(spec, untracked) %}
  {#- What the check of a new write reads (layout_sql's `reads`): 'rows'
      where it recomputes buckets; else each file's rows, from its footer
      through the session extension where the write's partitions live in
      its folders only (`untracked`: the extension lists them and reads the
      footers while the query is planned, no Spark job), or counted by a
      scan that reads no data column (a job: about 1.3 s of a one-day run
      in a fresh JVM). -#}
  {%- if spark_bucketing.check_recomputes_buckets(spec) -%}{{ return('rows') }}{%- endif -%}
  {{ return('footers' if untracked else 'files') }}
{% endmacro %}

{% macro verify_write(relation, spec, location, rels, other=none, untracked=false) %}
  {#- Checks a new write (unless verify_layout is false) and returns its
      partition stats, both from one query: {'stats': [...], 'other': the
      partition stats of `other`, a files_sql listed by the same query}. A
      write that breaks its layout is discarded and fails the run.
      `untracked`: its partitions live in its folders only (check_reads). -#}
  {%- if not spec.verify_layout -%}
    {%- set listing -%}
      select *, false as __sb_other from ({{ spark_bucketing.files_sql(relation, spec.partition_by) }}) as __sb_new
      {%- if other is not none %}
      union all
      select *, true as __sb_other from ({{ other }}) as __sb_old
      {%- endif %}
    {%- endset -%}
    {%- set written, listed = spark_bucketing.split_other(run_query(spark_bucketing.with_folders_sql(listing, spec.partition_by | length))) -%}
    {{ return({'stats': spark_bucketing.folder_stats(written, spec.partition_by), 'other': spark_bucketing.folder_stats(listed, spec.partition_by)}) }}
  {%- endif -%}
  {%- set checked = spark_bucketing.checked_stats(relation, spec, other, spark_bucketing.check_reads(spec, untracked)) -%}
  {%- if checked.problems > 0 -%}
    {%- set more = checked.problems - checked.lines | length -%}
    {%- do spark_bucketing.discard(relation, location, rels,
        "the new data broke its bucket layout in " ~ checked.problems
        ~ " files, so it was discarded and the table left as it was:\n  " ~ (checked.lines | join('\n  '))
        ~ ('\n  ... and ' ~ more ~ ' more files' if more > 0 else '')) -%}
  {%- endif -%}
  {{ return(checked) }}
{% endmacro %}

{% macro check_side_partitions(rels, location, stats, listed) %}
  {#- Every written partition has non-NULL values; the side entry's catalog
      (`listed`) lists exactly the folders its files are in; and each of
      those folders is `location`/<its catalog name>, the folder Spark wrote
      it to. So the location the switch gives a partition is the folder this
      check and the layout check read: read through the table after the
      switch, it shows the files and rows checked here. -#}
  {%- for s in stats if none in s['values'].values() -%}
    {%- do spark_bucketing.discard(rels.incr, location, rels,
        "the new rows have a NULL partition value (" ~ s.path ~ "); bucketed_incremental needs non-NULL partition columns. Fix: coalesce them in the model") -%}
  {%- endfor -%}
  {%- for s in stats if not spark_bucketing.same_location(s.location, location ~ '/' ~ s.path) -%}
    {%- do spark_bucketing.discard(rels.incr, location, rels,
        "a written partition's files are in " ~ s.location ~ ", not in " ~ location ~ "/" ~ s.path
        ~ " where its catalog entry puts it; nothing was published. Please report this with the partition values") -%}
  {%- endfor -%}
  {%- set listed = listed.keys() | sort(case_sensitive=true) -%}
  {%- set found = stats | map(attribute='path') | sort(case_sensitive=true) -%}
  {%- if listed != found -%}
    {%- do spark_bucketing.discard(rels.incr, location, rels,
        "the written partition folders " ~ found ~ " differ from the partitions the catalog lists for them " ~ listed
        ~ "; nothing was published. Please report this with the partition values") -%}
  {%- endif -%}
{% endmacro %}

{% macro check_row_accounting(relation, location, rels, partition_by, stats, accounting) %}
  {#- merge_row_accounting: each partition the merge wrote (or emptied) holds
      the rows its accounting expects. -#}
  {%- set written = {} -%}
  {%- for s in stats -%}{%- do written.update({spark_bucketing.values_key(s['values'], partition_by): s}) -%}{%- endfor -%}
  {%- set wrong = [] -%}
  {%- for key in (accounting.keys() | list + written.keys() | list) | unique | sort -%}
    {%- set a = accounting.get(key) -%}
    {%- set expected = a.rows_after if a is not none else 0 -%}
    {%- set found = written[key].rows if key in written else 0 -%}
    {%- if expected != found -%}
      {%- set name = written[key].path if key in written else (key if partition_by else 'the table') -%}
      {%- do wrong.append(name ~ ': ' ~ (spark_bucketing.accounting_text(a) if a is not none else 'no rows expected')
          ~ ', but ' ~ found ~ ' rows were written') -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if wrong -%}
    {%- do spark_bucketing.discard(relation, location, rels, "merge_row_accounting: the merged rows do not add up in "
        ~ (wrong | length) ~ " partitions, so nothing was published:\n  " ~ (wrong[:20] | join('\n  '))) -%}
  {%- endif -%}
{% endmacro %}
