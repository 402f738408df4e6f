{#- bucketed_table: builds the model into a side table, checks its layout,
    then swaps it in by renames. A failure at any step before the swap leaves
    the previous table and its rows untouched. -#}

{% macro owned_locations(spec, identifier) %}
  {#- With location_root, builds alternate between these two folders so that a
      new table never writes over the files of the table it replaces. -#}
  {%- set primary = spec.location_root ~ '/' ~ identifier -%}
  {{ return([primary, primary ~ '__dbt_alt']) }}
{% endmacro %}

{% macro is_owned_location(location, spec, identifier) %}
  {%- set location = (location or '').rstrip('/') -%}
  {%- for owned in spark_bucketing.owned_locations(spec, identifier) if location.endswith(owned) -%}
    {{ return(true) }}
  {%- endfor -%}
  {{ return(false) }}
{% endmacro %}

{% macro build_location(spec, identifier, old_info) %}
  {%- if not spec.location_root -%}{{ return(none) }}{%- endif -%}
  {%- set primary, alternate = spark_bucketing.owned_locations(spec, identifier) -%}
  {%- if old_info and (old_info.location or '').rstrip('/').endswith(primary) -%}
    {{ return(alternate) }}
  {%- endif -%}
  {{ return(primary) }}
{% endmacro %}

{% macro delete_location(location, scratch_relation) %}
  {#- Spark SQL has no statement that deletes a folder, but dropping a managed
      table deletes its location: point a scratch managed table at the folder,
      then drop it. Only ever called on the two folders this materialization
      owns for a model (see build_location). -#}
  {%- do adapter.drop_relation(scratch_relation) -%}
  {%- call statement('spark_bucketing_scratch') -%}
    create table {{ scratch_relation }} (unused int) using parquet
  {%- endcall -%}
  {%- call statement('spark_bucketing_scratch_location') -%}
    alter table {{ scratch_relation }} set location '{{ location }}'
  {%- endcall -%}
  {%- do adapter.drop_relation(scratch_relation) -%}
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

  {%- set location = spark_bucketing.build_location(spec, identifier, old_info) -%}
  {%- set scratch_relation = api.Relation.create(identifier=identifier ~ '__dbt_scratch', schema=schema, database=database, type='table') -%}
  {%- if location -%}
    {#- The folder may hold an older build whose partitions the new one would not overwrite. -#}
    {%- do spark_bucketing.delete_location(location, scratch_relation) -%}
  {%- endif -%}
  {%- do spark_bucketing.build_bucketed_relation(build_relation, spec, columns, sql, location) -%}
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
    {%- if location and old_info and old_info.type == 'external' and spark_bucketing.is_owned_location(old_info.location, spec, identifier) -%}
      {#- An external table's files outlive its DROP; the previous build's folder is ours to clear. -#}
      {%- do spark_bucketing.delete_location(old_info.location, scratch_relation) -%}
    {%- endif -%}
  {%- endif -%}

  {%- set should_revoke = should_revoke(old_relation, full_refresh_mode=True) -%}
  {%- do apply_grants(target_relation, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [target_relation]}) }}
{% endmaterialization %}
