{#- An incremental run, decided before anything is written: the run's
    context (incremental_run), then the plan of its strategy
    (incremental_plan): what to write and what the publish replaces. -#}

{% macro static_filter_sql(sql, spec, partitions) -%}
  {#- The model's rows, failing the write if any falls outside the static partitions. -#}
  select * from ({{ sql }}) as __sb_new
  where case when {{ spark_bucketing.partition_match(spec.partition_by, spark_bucketing.static_values(spec, partitions)) }} then true
        else raise_error('spark_bucketing: model {{ model.unique_id }} returned a row outside its static partitions (config partitions)') end
{%- endmacro %}

{% macro incremental_run(rels, sql, spec, incr) %}
  {#- Checks the query and the existing table against the configs, repairs
      what a failed run left, and returns the run's context: {spec, incr,
      merge, columns, new_sql, model_sql (the model's rows, a batch's
      checked: batch_rows_sql), existing, info, meta, full_refresh, rebuild,
      extension (extension_active)}. -#}
  {#- Only a run that died part-way (a swap between its renames) leaves anything to repair: no statement otherwise. -#}
  {%- set existing = spark_bucketing.recover(rels) -%}
  {%- set described = spark_bucketing.described_run(existing, sql) -%}
  {%- set query_columns = described.columns -%}
  {%- set full_build = should_full_refresh() or described.info is none -%}
  {%- set merge = spark_bucketing.merge_config(query_columns, full_build) if incr.strategy == 'merge' else none -%}
  {%- set columns = spark_bucketing.stored_columns(query_columns, merge) -%}
  {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}
  {%- if incr.batch is not none -%}
    {%- do spark_bucketing.check_batch_columns(spec, columns, incr.batch) -%}
    {%- set sql = spark_bucketing.batch_rows_sql(sql, spec, incr.batch) -%}
  {%- endif -%}
  {%- set extension = described.extension -%}
  {%- set info = described.info -%}
  {%- set run = {'incr': incr, 'merge': merge, 'new_sql': sql, 'model_sql': sql, 'existing': existing, 'info': info, 'meta': none,
                 'full_refresh': full_build, 'rebuild': false, 'columns': columns, 'spec': spec,
                 'extension': extension, 'run_id': rels.run_id} -%}
  {%- if not run.full_refresh -%}
    {#- The table's properties are read once per run (with its description, through the extension). -#}
    {%- set meta = spark_bucketing.read_metadata(existing, described.properties, records=false) -%}
    {%- if meta.version == '2' or spark_bucketing.records_format(spec) == '2' -%}
      {#- Format 2's records are written and read by the extension's statements, whether or not its planning is on. -#}
      {%- do spark_bucketing.require_records_extension(existing, run.extension or described.loaded, "cannot be run incrementally") -%}
      {%- do run.update({'extension': true}) -%}
    {%- endif -%}
    {%- set meta = spark_bucketing.finished_appends(rels, existing, meta) -%}
    {%- do spark_bucketing.check_added_files_config(spec, incr, run.extension) -%}
    {%- do run.update({'meta': meta, 'rebuild': spark_bucketing.check_incremental_target(spec, info, meta, incr)}) -%}
    {%- set changes = spark_bucketing.schema_changes(columns, info.columns) -%}
    {%- if changes is not none -%}
      {%- set change = spark_bucketing.schema_change_plan(changes, spec, incr.on_schema_change) -%}
      {%- if change.add or change.redeclare -%}
        {%- do run.update({'info': spark_bucketing.change_table_columns(rels, spec, columns, change)}) -%}
      {%- endif -%}
      {#- The model's rows in the table's columns, by name. -#}
      {%- do run.update({'new_sql': spark_bucketing.aligned_sql(sql, query_columns, run.info.columns,
          [merge.delete_column] if merge and merge.delete_column else [])}) -%}
    {%- endif -%}
    {#- From here on, the table's own column names and order: the rows are
        selected by name into them, and new partition folders are named as
        the table's. -#}
    {%- do run.update({'columns': run.info.columns, 'spec': spark_bucketing.validate_columns(spec, run.info.columns)}) -%}
  {%- endif -%}
  {%- if incr.partitions -%}
    {%- do run.update({'new_sql': spark_bucketing.static_filter_sql(run.new_sql, run.spec, incr.partitions)}) -%}
  {%- endif -%}
  {#- The commit lock's mark takes the extension's statement (mark_choosing). -#}
  {%- do rels.update({'extension': run.extension}) -%}
  {{ return(run) }}
{% endmacro %}

{% macro stage_location(run) %}
  {{ return(run.info.location.rstrip('/') ~ '/_bucketing/' ~ run.run_id ~ '__new') }}
{% endmacro %}

{% macro strategy_plan(run, whole, content, staged=none, replaced_partitions=none, accounting=none, bucketed_rows=false, added=[]) %}
  {#- A strategy's plan, what publish_incremental needs: the rows to write
      (`content`), whether the table is rewritten `whole`, the `staged` rows
      (stage) to drop afterwards, the partitions replaced even where the new rows
      leave them empty, a merge's row accounting, and whether `content`
      already holds each bucket's rows in one task, and the partitions
      (values_key) whose written files are `added` beside their own
      (appends_in_place). 'written', 'location' and 'checked': the rows
      written already (write_partitions' result), their folder and their
      check (verify_write), where the strategy wrote them
      (written_append_plan); then `content` is none. -#}
  {#- 'reads_old_rows': the rows are made from the partitions' old rows (a commit of another run to one of them since is a conflict). -#}
  {{ return({'content': content, 'whole': whole, 'staged': staged, 'stage_location': spark_bucketing.stage_location(run),
             'replaced_partitions': replaced_partitions, 'accounting': accounting, 'bucketed_rows': bucketed_rows,
             'strategy': run.incr.strategy, 'reads_old_rows': run.incr.strategy in ('append', 'merge', 'microbatch'), 'added': added,
             'written': none, 'location': none, 'checked': none}) }}
{% endmacro %}

{% macro stage(rels, run, columns, list_partitions) %}
  {#- Runs the model's query once into the run's staging folder
      (stage_new_rows); returns {'source', 'relation', 'folder'} of
      stage_new_rows, and 'partitions': those its rows fall in when
      `list_partitions`, else none. With the session extension the staged
      rows have no catalog entry (a side table's create and drop, and a
      metastore row per partition it writes: seconds on a backfill of
      hundreds). -#}
  {%- set staged = spark_bucketing.stage_new_rows(rels.new, columns, run.new_sql, spark_bucketing.stage_location(run),
      run.spec.partition_by, run.extension) -%}
  {%- do staged.update({'partitions': spark_bucketing.staged_partitions(staged, run.spec.partition_by) if list_partitions else none}) -%}
  {{ return(staged) }}
{% endmacro %}

{% macro finished_appends(rels, existing, meta) %}
  {#- The table's metadata once the appends of runs that died while their
      switch moved files into partitions' folders are completed (under the
      commit lock: finish_added_files), before this run reads any row. -#}
  {%- if not meta.adding -%}{{ return(meta) }}{%- endif -%}
  {%- do spark_bucketing.acquire_commit_lock(rels) -%}
  {%- do spark_bucketing.finish_added_files(rels, spark_bucketing.read_metadata(existing, records=false)) -%}
  {%- do spark_bucketing.release_commit_lock(rels) -%}
  {{ return(spark_bucketing.read_metadata(existing, records=false)) }}
{% endmacro %}
