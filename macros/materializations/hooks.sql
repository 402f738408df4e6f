{#- The end-of-run hook a project adds (dbt_project.yml: on-run-end:
    "{{ spark_bucketing.release_failed_runs_locks(results) }}"; dbt runs a
    package's own hooks only in some projects). A model that failed while it
    held its table's commit lock on an error the package cannot catch (the
    model's query failing in a full build, a statement of the commit failing
    in Spark or the metastore) releases it here, so other runs do not wait
    commit_lock_expiry for it. A run killed outright leaves its entries until
    they expire. -#}

{% macro release_failed_runs_locks(results) %}
  {%- set mine = local_md5(invocation_id)[:6] -%}
  {%- for res in results if res.status == 'error' and res.node.config.materialized in ('bucketed_incremental', 'bucketed_table') -%}
    {%- set rels = {'target': api.Relation.create(identifier=res.node.alias, schema=res.node.schema, database=res.node.database)} -%}
    {%- for e in spark_bucketing.lock_entries(rels.target, res.node.alias) if e.run.split('_')[1][:6] == mine -%}
      {%- do log("spark_bucketing: releasing the commit lock of " ~ rels.target ~ " held by run " ~ e.run ~ ", which failed", info=true) -%}
      {%- do spark_bucketing.drop_lock_entry(rels, e.name) -%}
    {%- endfor -%}
  {%- endfor -%}
{% endmacro %}
