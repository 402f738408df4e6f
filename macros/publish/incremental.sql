{#- Publishing an incremental run's plan: the whole table (unpartitioned
    tables, spec rebuilds) or its partitions, then one cleanup. -#}

{% macro publish_incremental(rels, run, plan) %}
  {%- set published = {'obsolete': []} -%}
  {%- if plan.whole -%}
    {#- Only an unpartitioned insert_overwrite rewrites the whole table from the new rows alone. -#}
    {%- set planned = none if run.incr.strategy == 'insert_overwrite' and not run.spec.partition_by
        else {'commit': run.meta.commit, 'location': run.info.location} -%}
    {%- do spark_bucketing.replace_table(rels, run.spec, run.columns, plan.content, run.existing, plan.accounting, planned) -%}
  {%- else -%}
    {%- do published.update(spark_bucketing.publish_partitions(rels, run.info, run.meta, run.spec, run.columns, plan, run.extension)) -%}
  {%- endif -%}
  {%- set obsolete = published.obsolete -%}
  {%- if plan.staged is not none -%}
    {#- After a rebuild the staged rows may be gone already, with the old table's folder. -#}
    {%- if plan.staged.relation is not none -%}{%- do adapter.drop_relation(plan.staged.relation) -%}{%- endif -%}
    {%- do obsolete.append(plan.stage_location) -%}
  {%- endif -%}
  {#- One batch: the replaced partition folders and the staged rows, all
      inside the table's folder. Through the session extension where it is
      active; else (and after a rebuild, which may have moved the table's
      folder) through the scratch table. -#}
  {%- if run.extension and not plan.whole -%}
    {%- do spark_bucketing.delete_table_folders(rels.target, obsolete) -%}
  {%- else -%}
    {%- do spark_bucketing.delete_locations(obsolete, rels.scratch) -%}
  {%- endif -%}
{% endmacro %}
