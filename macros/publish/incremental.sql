{#- Publishing an incremental run's plan: the whole table (unpartitioned
    tables, spec rebuilds) or its partitions. -#}

{% macro publish_incremental(rels, run, plan) %}
  {%- if not plan.whole -%}
    {#- It deletes the staged rows too. -#}
    {%- do spark_bucketing.publish_partitions(rels, run.info, run.meta, run.spec, run.columns, plan, run.extension) -%}
    {{ return(none) }}
  {%- endif -%}
  {#- Only an unpartitioned insert_overwrite rewrites the whole table from the new rows alone. -#}
  {%- set planned = none if run.incr.strategy == 'insert_overwrite' and not run.spec.partition_by
      else {'commit': run.meta.commit, 'location': run.info.location} -%}
  {%- do spark_bucketing.replace_table(rels, run.spec, run.columns, plan.content, run.existing, plan.accounting, planned) -%}
  {%- if plan.staged is not none -%}
    {#- The staged rows may be gone already, with the old table's folder (a
        rebuild may have moved the table's folder: the scratch table deletes
        folders anywhere). -#}
    {%- if plan.staged.relation is not none -%}{%- do adapter.drop_relation(plan.staged.relation) -%}{%- endif -%}
    {%- do spark_bucketing.delete_locations([plan.stage_location], rels.scratch) -%}
  {%- endif -%}
{% endmacro %}
