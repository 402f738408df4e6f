{#- bucketed_table: builds the model into a side table in a folder of its
    own, checks its layout, then swaps it in by renames. A failure at any step
    before the swap leaves the previous table and its rows untouched. -#}

{% materialization bucketed_table, adapter='spark' %}
  {%- set spec = spark_bucketing.bucket_spec() -%}
  {%- set rels = spark_bucketing.model_relations() -%}
  {%- set grant_config = config.get('grants') -%}

  {{ run_hooks(pre_hooks) }}

  {#- Everything the configs, the contract and the query's schema can tell is checked before the first write. -#}
  {%- set model_sql = spark_bucketing.contract_sql(sql) -%}
  {%- set columns = spark_bucketing.query_columns(model_sql) -%}
  {%- set spec = spark_bucketing.validate_columns(spec, columns) -%}

  {%- set old_relation = spark_bucketing.recover(rels) -%}
  {%- do spark_bucketing.replace_table(rels, spec, columns, model_sql, old_relation) -%}

  {%- set should_revoke = should_revoke(old_relation, full_refresh_mode=True) -%}
  {%- do apply_grants(rels.target, grant_config, should_revoke) -%}

  {{ run_hooks(post_hooks) }}

  {{ return({'relations': [rels.target]}) }}
{% endmaterialization %}
