{#- The end-of-run hook a project adds (dbt_project.yml: on-run-end:
    "{{ spark_bucketing.release_failed_runs_locks(results) }}"; dbt runs a
    package's own hooks only in some projects). A model that failed on an
    error the package cannot catch (a statement failing in Spark or the
    metastore) while it held its table's commit lock releases it here, so
    other runs do not wait commit_lock_expiry for it; and its side entries
    (and a full build's folder) go at once instead of after
    leftover_grace_period. A run killed outright leaves its entries until
    they expire. -#}

{% macro release_failed_runs_locks(results) %}
  {%- set mine = local_md5(invocation_id)[:6] -%}
  {%- for res in results if res.status == 'error' and (res.node.config.materialized == 'bucketed_table' or spark_bucketing.is_bucketed_incremental(res.node.config)) -%}
    {%- set alias = res.node.alias | lower -%}
    {%- set rels = {'target': api.Relation.create(identifier=alias, schema=res.node.schema, database=res.node.database),
                    'scratch': api.Relation.create(identifier=alias ~ '__dbt_scratch_hook_' ~ mine, schema=res.node.schema, database=res.node.database, type='table')} -%}
    {#- One listing serves the lock entries and the side entries. -#}
    {%- set names = spark_bucketing.side_listing(rels.target, alias) -%}
    {%- for e in spark_bucketing.lock_entries(rels.target, alias, names) if e.run.split('_')[1][:6] == mine -%}
      {%- do log("spark_bucketing: releasing the commit lock of " ~ rels.target ~ " held by run " ~ e.run ~ ", which failed", info=true) -%}
      {%- do spark_bucketing.drop_lock_entry(rels, e.name) -%}
    {%- endfor -%}
    {%- set suffixes = spark_bucketing.run_side_roles() | map(attribute='1') | join('|') -%}
    {%- set pattern = '^' ~ modules.re.escape(alias) ~ '(' ~ suffixes ~ ')_r[0-9]+_' ~ mine ~ '[0-9a-f]{6}$' -%}
    {%- for name in names -%}
      {%- set m = modules.re.match(pattern, name) -%}
      {%- if m -%}
        {%- set rel = api.Relation.create(identifier=name, schema=res.node.schema, database=res.node.database, type='table') -%}
        {%- do log("spark_bucketing: dropping " ~ rel ~ ", left by a run of " ~ res.node.unique_id ~ " that failed", info=true) -%}
        {%- do spark_bucketing.drop_side_entry(rels, rel, m.group(1), res.node.config.location_root) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
{% endmacro %}
