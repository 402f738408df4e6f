{#- The catalog entries of one run: the model's table and its side entries,
    and the swap of one entry into the table's place. -#}

{% macro new_run_id() %}
  {#- A name of this run, unique among the runs of any process or thread:
      its start in epoch seconds (read by the cleanup of dead runs'
      leftovers, run_started_epoch), six hex digits of the invocation (a
      reader of the logs finds the invocation's runs by them) and six of
      the thread, model and clock. -#}
  {{ return('r' ~ spark_bucketing.epoch_now() ~ '_' ~ local_md5(invocation_id)[:6]
      ~ local_md5(thread_id ~ '/' ~ model.unique_id ~ '/' ~ modules.datetime.datetime.utcnow().isoformat())[:6]) }}
{% endmacro %}

{% macro run_started_epoch(run_id) %}
  {#- The start (epoch seconds) a run id names, or none for a name that is not one. -#}
  {%- set m = modules.re.match('^r([0-9]+)_[0-9a-f]{12}$', run_id) -%}
  {{ return(m.group(1) | int if m else none) }}
{% endmacro %}

{% macro run_side_roles() %}
  {#- The side entries each run names after itself: no two runs of one
      table ever touch the same one. -#}
  {{ return([('tmp', '__dbt_tmp'), ('scratch', '__dbt_scratch'), ('incr', '__dbt_incr'), ('respec', '__dbt_respec'), ('new', '__dbt_new')]) }}
{% endmacro %}

{% macro model_relations() %}
  {#- The model's table, its run's side entries (`<alias><suffix>_<run id>`),
      the backup a swap renames the table to (only ever used under the
      table's commit lock) and the run's id ('run_id'). -#}
  {%- set base = model['alias'] -%}
  {%- set run_id = spark_bucketing.new_run_id() -%}
  {%- set out = {'run_id': run_id} -%}
  {%- for role, suffix in [('target', ''), ('backup', '__dbt_backup')] + spark_bucketing.run_side_roles() -%}
    {%- set name = base ~ suffix ~ ('' if role in ('target', 'backup') else '_' ~ run_id) -%}
    {%- do out.update({role: api.Relation.create(identifier=name, schema=schema, database=database, type='table')}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro drop_if_listed(relation) %}
  {#- Drops a side entry a failed run may have left. dbt listed the schema
      when the run started, so its cache answers without a statement. -#}
  {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
  {%- if found is not none -%}{%- do adapter.drop_relation(found) -%}{%- endif -%}
{% endmacro %}

{% macro listed_relation(relation) %}
  {#- The entry as the catalog lists it now (not dbt's cache of the run's start), or none. -#}
  {%- set found = run_query('show tables in ' ~ relation.schema ~ " like '" ~ relation.identifier ~ "'") -%}
  {%- if found | length == 0 -%}{{ return(none) }}{%- endif -%}
  {{ return(adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier)
      or relation) }}
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
