{#- bucketed_table: builds the model into a side table, checks its layout,
    then swaps it in by renames. A failure at any step before the swap leaves
    the previous table and its rows untouched. -#}

{% macro build_location(spec, identifier, old_info) %}
  {#- With location_root, builds alternate between two folders so that the new
      table never writes over the files of the one it replaces. -#}
  {%- if not spec.location_root -%}{{ return(none) }}{%- endif -%}
  {%- set primary = spec.location_root ~ '/' ~ identifier -%}
  {%- set alternate = primary ~ '__dbt_alt' -%}
  {%- if old_info and (old_info.location or '').rstrip('/').endswith('/' ~ identifier) -%}
    {{ return(alternate) }}
  {%- endif -%}
  {{ return(primary) }}
{% endmacro %}

{% macro build_bucketed_relation(relation, spec, columns, sql, location) %}
  {#- Creates `relation` and fills it with one file per (partition, bucket). -#}
  {%- if spec.bucket_hash == 'hive' -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- call statement('spark_bucketing_create') -%}
    {{ spark_bucketing.create_bucketed_table_sql(relation, spec, columns, location) }}
  {%- endcall -%}
  {%- set select_sql = spark_bucketing.distributed_select_sql(spec, columns, sql) -%}
  {%- set previous = spark_bucketing.apply_settings(spark_bucketing.write_settings()) -%}
  {%- call statement('main') -%}
    insert overwrite table {{ relation }}
    {%- if spec.partition_by %} partition ({{ spark_bucketing.quoted(spec.partition_by) | join(', ') }}){% endif %}
    {{ select_sql }}
  {%- endcall -%}
  {%- do spark_bucketing.restore_settings(previous) -%}
{% endmacro %}

{% macro assert_layout(relation, spec) %}
  {%- set violations = spark_bucketing.layout_violations(relation) -%}
  {%- if violations | length > 0 -%}
    {%- do adapter.drop_relation(relation) -%}
    {%- do exceptions.raise_compiler_error(
        "spark_bucketing: model '" ~ model.unique_id ~ "': the new table broke its bucket layout in "
        ~ (violations | length) ~ " files, so it was dropped and the previous table kept:\n"
        ~ spark_bucketing.describe_violations(violations)) -%}
  {%- endif -%}
{% endmacro %}

{% materialization bucketed_table, adapter='spark' %}
  {%- set identifier = model['alias'] -%}
  {%- set spec = spark_bucketing.bucket_spec() -%}
  {%- set target_relation = api.Relation.create(identifier=identifier, schema=schema, database=database, type='table') -%}
  {%- set build_relation = api.Relation.create(identifier=identifier ~ '__dbt_tmp', schema=schema, database=database, type='table') -%}
  {%- set backup_relation = api.Relation.create(identifier=identifier ~ '__dbt_backup', schema=schema, database=database, type='table') -%}
  {%- set old_relation = adapter.get_relation(database=database, schema=schema, identifier=identifier) -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {#- Everything the configs and the query's schema can tell is checked before the first write. -#}
  {%- set columns = spark_bucketing.query_columns(sql) -%}
  {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}
  {%- set old_info = spark_bucketing.table_info(old_relation) if old_relation is not none and old_relation.is_table else none -%}

  {#- Leftovers of an earlier run that failed part-way. -#}
  {%- do adapter.drop_relation(build_relation) -%}
  {%- do adapter.drop_relation(backup_relation) -%}

  {%- do spark_bucketing.build_bucketed_relation(
      build_relation, spec, columns, sql, spark_bucketing.build_location(spec, identifier, old_info)) -%}
  {%- if spec.verify_layout -%}
    {%- do spark_bucketing.assert_layout(build_relation, spec) -%}
  {%- endif -%}

  {#- The swap: only renames from here on. -#}
  {%- if old_relation is not none -%}
    {%- do adapter.rename_relation(old_relation, backup_relation.incorporate(type=old_relation.type)) -%}
  {%- endif -%}
  {%- do adapter.rename_relation(build_relation, target_relation) -%}
  {%- if old_relation is not none -%}
    {%- do adapter.drop_relation(backup_relation.incorporate(type=old_relation.type)) -%}
  {%- endif -%}

  {%- set should_revoke = should_revoke(old_relation, full_refresh_mode=True) -%}
  {%- do apply_grants(target_relation, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
