{#- bucketed_incremental: the first run and --full-refresh build like
    bucketed_table; later runs write only the partitions the new rows touch
    (insert_overwrite) or rewrite them with old and new rows (append), always
    one file per bucket per partition. A change of bucket spec is handled by
    on_bucket_change: fail, rebuild, or evolve. -#}

{% materialization bucketed_incremental, adapter='spark' %}
  {%- set spec = spark_bucketing.bucket_spec() -%}
  {%- set incr = spark_bucketing.incremental_config(spec) -%}
  {%- set rels = spark_bucketing.model_relations() -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {%- set columns = spark_bucketing.query_columns(sql) -%}
  {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}
  {%- set new_sql = spark_bucketing.static_filter_sql(sql, spec, incr.partitions) if incr.partitions else sql -%}

  {%- set existing = spark_bucketing.recover(rels) -%}
  {%- set info = spark_bucketing.table_info(existing) if existing is not none and existing.is_table else none -%}
  {%- set full_refresh = should_full_refresh() or info is none -%}
  {%- set rebuild = false -%}
  {%- if not full_refresh -%}
    {%- set rebuild = spark_bucketing.check_incremental_target(spec, columns, info, existing, incr) -%}
  {%- endif -%}

  {%- if full_refresh -%}
    {%- do spark_bucketing.replace_table(rels, spec, columns, sql, existing, info) -%}
  {%- elif rebuild or not spec.partition_by -%}
    {#- Unpartitioned tables and spec rebuilds are rewritten whole, atomically. -#}
    {%- set content = spark_bucketing.content_sql(incr.strategy, spec, columns, new_sql, existing, true) -%}
    {%- do spark_bucketing.replace_table(rels, spec, columns, content, existing, info) -%}
  {%- else -%}
    {%- set content = spark_bucketing.content_sql(incr.strategy, spec, columns, new_sql, existing, false) -%}
    {%- do spark_bucketing.write_partitions(rels, existing, spec, columns, content, incr.partitions) -%}
    {%- do spark_bucketing.converge(rels, rels.target, spec) -%}
  {%- endif -%}

  {%- set should_revoke = should_revoke(existing, full_refresh_mode=full_refresh) -%}
  {%- do apply_grants(rels.target, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [rels.target]}) }}
{% endmaterialization %}
