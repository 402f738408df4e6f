{#- bucketed_table: builds the model into a side table in a folder of its
    own, checks its layout, then swaps it in by renames. A failure at any step
    before the swap leaves the previous table and its rows untouched. -#}

{% materialization bucketed_table, adapter='spark' %}
  {%- set spec = spark_bucketing.bucket_spec() -%}
  {%- set rels = spark_bucketing.model_relations() -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {#- Everything the configs and the query's schema can tell is checked before the first write. -#}
  {%- set columns = spark_bucketing.query_columns(sql) -%}
  {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}

  {%- set old_relation = spark_bucketing.recover(rels) -%}
  {%- set old_info = spark_bucketing.table_info(old_relation) if old_relation is not none and old_relation.is_table else none -%}
  {%- do spark_bucketing.replace_table(rels, spec, columns, sql, old_relation, old_info) -%}

  {%- set should_revoke = should_revoke(old_relation, full_refresh_mode=True) -%}
  {%- do apply_grants(rels.target, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [rels.target]}) }}
{% endmaterialization %}
