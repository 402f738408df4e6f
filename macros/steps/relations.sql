{#- The catalog entries of one run: the model's table and its side entries,
    and the repair of what a run that died part-way left behind. -#}

{% macro model_relations() %}
  {%- set base = model['alias'] -%}
  {%- set out = {} -%}
  {%- for role, suffix in [('target', ''), ('tmp', '__dbt_tmp'), ('backup', '__dbt_backup'), ('scratch', '__dbt_scratch'),
                          ('incr', '__dbt_incr'), ('respec', '__dbt_respec'), ('new', '__dbt_new')] -%}
    {%- do out.update({role: api.Relation.create(identifier=base ~ suffix, schema=schema, database=database, type='table')}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro drop_if_listed(relation) %}
  {#- Drops a side entry a failed run may have left. dbt listed the schema
      when the run started, so its cache answers without a statement. -#}
  {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
  {%- if found is not none -%}{%- do adapter.drop_relation(found) -%}{%- endif -%}
{% endmacro %}

{% macro recover(rels) %}
  {#- Repairs what a run that died part-way left behind; returns the target
      relation (or none). Only catalog entries are dropped here: every table
      involved is external, so their files stay. -#}
  {%- set target = adapter.get_relation(database=rels.target.database, schema=rels.target.schema, identifier=rels.target.identifier) -%}
  {%- set backup = adapter.get_relation(database=rels.backup.database, schema=rels.backup.schema, identifier=rels.backup.identifier) -%}
  {%- if target is none and backup is not none -%}
    {#- A swap stopped between its two renames: the backup is the live table. -#}
    {%- do adapter.rename_relation(backup, rels.target.incorporate(type=backup.type)) -%}
    {%- set target = adapter.get_relation(database=rels.target.database, schema=rels.target.schema, identifier=rels.target.identifier) -%}
  {%- elif backup is not none -%}
    {%- do adapter.drop_relation(backup) -%}
  {%- endif -%}
  {%- for role in ('tmp', 'incr', 'respec', 'new') -%}{%- do spark_bucketing.drop_if_listed(rels[role]) -%}{%- endfor -%}
  {{ return(target) }}
{% endmacro %}

{% macro swap_in(new, old, rels, step_prefix='') %}
  {#- Puts the entry `new` in the place of `old` (or of nothing) by renames:
      old -> backup, new -> target, then the backup is dropped. A run that
      dies between the renames is repaired by recover(). -#}
  {%- if old is not none -%}
    {%- do adapter.rename_relation(old, rels.backup.incorporate(type=old.type)) -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint(step_prefix ~ 'mid_swap') -%}
  {%- do adapter.rename_relation(new, rels.target) -%}
  {%- if old is not none -%}
    {%- do adapter.drop_relation(rels.backup.incorporate(type=old.type)) -%}
  {%- endif -%}
{% endmacro %}
