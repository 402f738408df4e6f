{#- bucketed_incremental: the first run and --full-refresh build like
    bucketed_table; later runs write only the partitions the new rows touch
    (insert_overwrite), rewrite them with old and new rows (append), or with
    the rows merged by unique_key (merge), always
    one file per bucket per partition. A change of bucket spec is handled by
    on_bucket_change: fail, rebuild, or evolve. The model's query runs once
    per run. -#}

{% materialization bucketed_incremental, adapter='spark' %}
  {%- set spec = spark_bucketing.bucket_spec() -%}
  {%- set incr = spark_bucketing.incremental_config(spec) -%}
  {%- set rels = spark_bucketing.model_relations() -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {%- set query_columns = spark_bucketing.query_columns(sql) -%}
  {%- set merge = spark_bucketing.merge_config(query_columns) if incr.strategy == 'merge' else none -%}
  {%- set columns = spark_bucketing.stored_columns(query_columns, merge) -%}
  {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}
  {%- set new_sql = spark_bucketing.static_filter_sql(sql, spec, incr.partitions) if incr.partitions else sql -%}

  {%- set existing = spark_bucketing.recover(rels) -%}
  {%- set info = spark_bucketing.table_info(existing) if existing is not none and existing.is_table else none -%}
  {%- set full_refresh = should_full_refresh() or info is none -%}
  {%- set rebuild = false -%}
  {%- if not full_refresh -%}
    {#- The table's properties are read once per run. -#}
    {%- set meta = spark_bucketing.read_metadata(existing) -%}
    {%- set rebuild = spark_bucketing.check_incremental_target(spec, columns, info, meta, incr) -%}
    {#- From here on, the table's own column names and order: the rows are
        selected by name into them, and new partition folders are named as
        the table's. -#}
    {%- set columns = info.columns -%}
    {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}
  {%- endif -%}

  {%- if full_refresh -%}
    {%- do spark_bucketing.replace_table(rels, spec, columns, spark_bucketing.kept_rows_sql(sql, columns, merge), existing, info) -%}
  {%- else -%}
    {%- set whole = rebuild or not spec.partition_by -%}
    {%- set staged = merge is not none or spark_bucketing.needs_staging(incr.strategy, spec, whole) -%}
    {%- set stage_location = info.location.rstrip('/') ~ '/_bucketing/' ~ invocation_id ~ '__new' -%}
    {%- if staged -%}
      {%- set stage_columns = columns.copy() -%}
      {%- if merge and merge.delete_column -%}{%- do stage_columns.update({merge.delete_column: 'boolean'}) -%}{%- endif -%}
      {%- do spark_bucketing.stage_new_rows(rels.new, stage_columns, new_sql, stage_location, spec.partition_by) -%}
    {%- endif -%}
    {%- set touched = spark_bucketing.staged_partitions(rels.new) if staged and not whole else none -%}
    {%- set replaced_partitions = incr.partitions -%}
    {%- set accounting = none -%}
    {%- if merge is not none -%}
      {%- do spark_bucketing.check_new_keys(rels, stage_location, merge) -%}
      {%- set replaced_partitions = none if whole else spark_bucketing.merge_scope(existing, rels.new, touched, merge, spec.partition_by) -%}
      {%- if merge.validate_deletes -%}
        {%- do spark_bucketing.check_deletes_exist(existing, rels, stage_location, merge, spec.partition_by, replaced_partitions) -%}
      {%- endif -%}
      {%- if merge.row_accounting -%}
        {%- set accounting = spark_bucketing.merge_row_accounting(existing, rels.new, merge, spec.partition_by, replaced_partitions) -%}
      {%- endif -%}
      {%- set content = spark_bucketing.merge_sql(existing, rels.new, columns, merge, spec, replaced_partitions) -%}
    {%- else -%}
      {%- set content = spark_bucketing.content_sql(incr.strategy, spec, columns, rels.new if staged else new_sql, existing, whole, touched) -%}
    {%- endif -%}
    {%- set obsolete = [] -%}
    {%- if whole -%}
      {#- Unpartitioned tables and spec rebuilds are rewritten whole, atomically. -#}
      {%- do spark_bucketing.replace_table(rels, spec, columns, content, existing, info, accounting) -%}
    {%- else -%}
      {%- set bucketed_rows = merge is not none and spark_bucketing.merge_output_is_bucketed(merge, spec, info) -%}
      {%- set published = spark_bucketing.write_partitions(rels, info, meta, spec, columns, content, replaced_partitions, bucketed_rows, accounting) -%}
      {%- do spark_bucketing.converge(rels, spec, published) -%}
      {%- do obsolete.extend(published.obsolete) -%}
    {%- endif -%}
    {%- if staged -%}
      {#- After a rebuild the staged rows may be gone already, with the old table's folder. -#}
      {%- do adapter.drop_relation(rels.new) -%}
      {%- do obsolete.append(stage_location) -%}
    {%- endif -%}
    {#- One batch: the replaced partition folders and the staged rows. -#}
    {%- do spark_bucketing.delete_locations(obsolete, rels.scratch) -%}
  {%- endif -%}

  {%- set should_revoke = should_revoke(existing, full_refresh_mode=full_refresh) -%}
  {%- do apply_grants(rels.target, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [rels.target]}) }}
{% endmaterialization %}
