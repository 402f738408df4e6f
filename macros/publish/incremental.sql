{#- Publishing an incremental run's plan: the whole table (unpartitioned
    tables, spec rebuilds) or its partitions, then one cleanup. -#}

{% macro publish_incremental(rels, run, plan) %}
  {%- set obsolete = [] -%}
  {%- if plan.whole -%}
    {%- do spark_bucketing.replace_table(rels, run.spec, run.columns, plan.content, run.existing, run.info, plan.accounting) -%}
  {%- else -%}
    {%- do obsolete.extend(spark_bucketing.publish_partitions(rels, run.info, run.meta, run.spec, run.columns, plan)) -%}
  {%- endif -%}
  {%- if plan.staged -%}
    {#- After a rebuild the staged rows may be gone already, with the old table's folder. -#}
    {%- do adapter.drop_relation(rels.new) -%}
    {%- do obsolete.append(plan.stage_location) -%}
  {%- endif -%}
  {#- One batch: the replaced partition folders and the staged rows. -#}
  {%- do spark_bucketing.delete_locations(obsolete, rels.scratch) -%}
{% endmacro %}
