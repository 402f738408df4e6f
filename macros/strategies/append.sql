{#- incremental_strategy='append': the new rows are added. Each partition
    they fall in is rewritten with its old rows and the new ones, or, where
    max_files_per_bucket allows one more file per bucket, takes the new
    rows' files beside its own (appends_in_place). -#}

{% macro append_plan(rels, run, whole) %}
  {{ return(adapter.dispatch('append_plan', 'spark_bucketing')(rels, run, whole)) }}
{% endmacro %}

{% macro default__append_plan(rels, run, whole) %}
  {%- set cols = spark_bucketing.quoted(run.columns.keys() | list) | join(', ') -%}
  {%- if whole -%}
    {%- set content -%}
      select {{ cols }} from {{ run.existing }}
      union all
      select {{ cols }} from ({{ run.new_sql }}) as __sb_new
    {%- endset -%}
    {{ return(spark_bucketing.strategy_plan(run, whole, content)) }}
  {%- endif -%}
  {%- if spark_bucketing.may_add_files(run) -%}
    {{ return(spark_bucketing.written_append_plan(rels, run)) }}
  {%- endif -%}
  {#- The new rows are staged, so that their catalog entry (or folder) names
      the partitions they touch: a literal filter, and Spark reads only those
      partitions of the table. -#}
  {%- set staged = spark_bucketing.stage(rels, run, run.columns, true) -%}
  {{ return(spark_bucketing.staged_append_plan(run, staged, {})) }}
{% endmacro %}

{% macro staged_append_plan(run, staged, in_place) %}
  {#- The plan that writes the `staged` new rows with the old rows of the
      partitions they touch, but for those that take the new rows' files
      beside their own (`in_place`: appends_in_place). -#}
  {%- set cols = spark_bucketing.quoted(run.columns.keys() | list) | join(', ') -%}
  {%- set rewritten = staged.partitions | reject('in', in_place.values() | list) | list -%}
  {%- set content -%}
    select {{ cols }} from {{ staged.source }}
    {%- if rewritten %}
    union all
    select {{ cols }} from {{ run.existing }}
    where {{ spark_bucketing.partition_match(run.spec.partition_by, rewritten) }}
    {%- endif %}
  {%- endset -%}
  {{ return(spark_bucketing.strategy_plan(run, false, content, staged=staged, replaced_partitions=run.incr.partitions,
      added=in_place.keys() | list)) }}
{% endmacro %}

{% macro written_append_plan(rels, run) %}
  {#- An append that may add files (may_add_files): the model's rows are
      written at once as the table's buckets, into the staging folder, whose
      listing names the partitions they touch. Where each of them takes the
      files beside its own (appends_in_place) or is not in the table yet,
      that folder is what the run publishes: one write, as stock's append.
      Else it is the staged rows of staged_append_plan, and the partitions
      it cannot add to are rewritten with their old rows. -#}
  {%- set location = spark_bucketing.stage_location(run) -%}
  {%- set check = spark_bucketing.folder_check_sql(run.spec, run.columns, location) -%}
  {#- The check's rows carry the written partitions' records too: no statement of their own (appends_in_place). -#}
  {%- set records_checked = check is not none and run.spec.partition_by | length > 0 -%}
  {%- set written = spark_bucketing.write_bucketed_folder(run.spec, run.columns, run.new_sql, location, false, check,
      records_of=run.existing if records_checked else none) -%}
  {#- The write's check lists the partitions too. -#}
  {%- set checked = spark_bucketing.verify_write(written, run.spec, location, rels) -%}
  {%- set staged = {'source': spark_bucketing.folder_source(written.folder), 'relation': none, 'folder': written.folder,
                    'partitions': checked.stats | map(attribute='values') | list} -%}
  {%- set listed = spark_bucketing.checked_partition_records(run.existing, written.check) if records_checked else none -%}
  {%- set in_place = spark_bucketing.appends_in_place(run, staged.partitions, listed=listed) -%}
  {%- set others = checked.stats | rejectattr('values', 'in', in_place.values() | list) | map(attribute='path') | list -%}
  {#- By path, as the commit's guard compares them (added_paths): those the check's rows found listed, else one
      SHOW PARTITIONS, where there are any. -#}
  {%- if not others or not (others | select('in', listed if listed is not none else spark_bucketing.catalog_paths(run.existing)) | list) -%}
    {%- set plan = spark_bucketing.strategy_plan(run, false, none, replaced_partitions=run.incr.partitions, added=in_place.keys() | list) -%}
    {%- do plan.update({'written': written, 'location': location, 'checked': checked}) -%}
    {{ return(plan) }}
  {%- endif -%}
  {{ return(spark_bucketing.staged_append_plan(run, staged, in_place)) }}
{% endmacro %}

{% macro may_add_files(run) %}
  {#- Whether an append may add files to the partitions it touches (their
      records decide which: appends_in_place): max_files_per_bucket above 1,
      the session extension (its switch moves the files in and records
      them in one statement), and the table's records kept where the run
      keeps them (a run that moves them, bucket_records changed, rewrites). -#}
  {{ return(run.spec.get('max_files_per_bucket', 1) >= 2 and run.extension
      and (run.meta.version or '1') == spark_bucketing.records_format(run.spec)) }}
{% endmacro %}

{% macro appends_in_place(run, partitions, batch_start=none, listed=none) %}
  {#- {values_key: values} of the touched `partitions` that take the new
      rows' files beside their own instead of being rewritten: with
      may_add_files, each partition whose record has this run's spec and
      room for one more file per bucket (`appended`: the files per bucket
      added since it was last written whole) and whose folder is the one its
      record describes (a run that died in its switch can leave a record
      behind). One statement reads the touched partitions' folders, and
      format 2's records (partition_records_of), however many partitions
      the append touches, unless the write's check read them (`listed`:
      checked_partition_records); format 1's records are the table's
      properties.
      Format 2 keeps the records in run.meta, where the commit finds them as
      it finds format 1's (publish_partitions). For a microbatch batch
      (`batch_start`: the start of its range), only a partition whose rows
      all have an earlier event time (its record's event_time_before, at or
      before the start: event_time_bounds). The others are rewritten, one
      file per bucket again: the compaction past the limit. -#}
  {%- set limit = run.spec.get('max_files_per_bucket', 1) -%}
  {%- if not spark_bucketing.may_add_files(run) or not partitions -%}
    {{ return({}) }}
  {%- endif -%}
  {%- set by_key = {} -%}
  {%- set folders = {} -%}
  {%- for path, found in (listed if listed is not none else spark_bucketing.partition_records_of(run.existing, partitions)).items() -%}
    {#- Format 1's records are the table's properties (a partition's parameters may keep a record of an earlier format 2). -#}
    {%- set rec = found.record if run.meta.version == '2' else run.meta.partitions.get(path) -%}
    {%- if rec is not none and rec['values'] is defined -%}
      {%- set key = spark_bucketing.values_key(rec['values'], run.spec.partition_by) -%}
      {%- do by_key.update({key: rec}) -%}
      {%- do folders.update({key: found.location}) -%}
      {%- if run.meta.version == '2' -%}{%- do run.meta.partitions.update({path: rec}) -%}{%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- set spec = spark_bucketing.spec_record(run.spec) -%}
  {%- set out = {} -%}
  {%- for values in partitions -%}
    {%- set key = spark_bucketing.values_key(values, run.spec.partition_by) -%}
    {%- set rec = by_key.get(key) -%}
    {%- if rec is not none and spark_bucketing.same_spec(rec, spec) and rec.get('appended', 0) + 2 <= limit
        and (batch_start is none or spark_bucketing.event_time_at_or_before(rec.get('event_time_before'), batch_start))
        and spark_bucketing.same_location(rec.location, folders[key]) -%}
      {%- do out.update({key: values}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}
