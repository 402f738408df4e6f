{#- The catalog entries of one run: the model's table and its side entries,
    and the repair of what a run that died part-way left behind. -#}

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

{% macro recover(rels) %}
  {#- Repairs what a run that died part-way left behind; returns the target
      relation (or none). A swap stopped between its two renames (the table
      missing, its backup there) is repaired under the commit lock, which
      every swap holds: a live swap is never taken for a dead one. Side
      entries of dead runs are dropped (drop_dead_runs_entries). Only
      catalog entries are dropped here: every table involved is external,
      so their files stay. -#}
  {%- set target = adapter.get_relation(database=rels.target.database, schema=rels.target.schema, identifier=rels.target.identifier) -%}
  {%- set backup = adapter.get_relation(database=rels.backup.database, schema=rels.backup.schema, identifier=rels.backup.identifier) -%}
  {%- if backup is not none -%}
    {%- do spark_bucketing.acquire_commit_lock(rels) -%}
    {%- set target = spark_bucketing.listed_relation(rels.target) -%}
    {%- set backup = spark_bucketing.listed_relation(rels.backup) -%}
    {%- if target is none and backup is not none -%}
      {%- do adapter.rename_relation(backup, rels.target.incorporate(type=backup.type)) -%}
      {%- set target = spark_bucketing.listed_relation(rels.target) -%}
    {%- elif backup is not none -%}
      {%- do adapter.drop_relation(backup) -%}
    {%- endif -%}
    {%- do spark_bucketing.release_commit_lock(rels) -%}
  {%- endif -%}
  {%- do spark_bucketing.drop_dead_runs_entries(rels) -%}
  {{ return(target) }}
{% endmacro %}

{% macro listed_relation(relation) %}
  {#- The entry as the catalog lists it now (not dbt's cache of the run's start), or none. -#}
  {%- set found = run_query('show tables in ' ~ relation.schema ~ " like '" ~ relation.identifier ~ "'") -%}
  {%- if found | length == 0 -%}{{ return(none) }}{%- endif -%}
  {{ return(adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier)
      or relation) }}
{% endmacro %}

{% macro drop_dead_runs_entries(rels, roles=none, grace=none) %}
  {#- Drops the side entries of other runs of this model in `roles`
      (run_side_roles' names; all by default) that started more than `grace`
      seconds ago (leftover_grace_period by default): a run that died left
      them (a live run is younger). A run that holds the commit lock passes
      the roles only a lock holder makes, and 0: they are dead runs'. One
      SHOW TABLES. -#}
  {%- set now = spark_bucketing.epoch_now() -%}
  {%- set grace = spark_bucketing.leftover_grace_period() if grace is none else grace -%}
  {%- set alias = rels.target.identifier | lower -%}
  {%- set suffixes = spark_bucketing.run_side_roles() | selectattr('0', 'in', roles or spark_bucketing.run_side_roles() | map(attribute='0') | list)
      | map(attribute='1') | join('|') -%}
  {%- set pattern = '^' ~ modules.re.escape(alias) ~ '(' ~ suffixes ~ ')_(r[0-9]+_[0-9a-f]{12})$' -%}
  {%- for name in run_query('show tables in ' ~ rels.target.schema ~ " like '" ~ alias ~ "__dbt_*'").columns[1].values() -%}
    {%- set m = modules.re.match(pattern, name) -%}
    {%- set started = spark_bucketing.run_started_epoch(m.group(2)) if m and m.group(2) != rels.run_id else none -%}
    {%- if started is not none and started <= now - grace -%}
      {%- set rel = api.Relation.create(identifier=name, schema=rels.target.schema, database=rels.target.database, type='table') -%}
      {%- do log("spark_bucketing: dropping " ~ rel ~ ", left by a run that started " ~ (now - started) ~ " s ago and did not finish", info=true) -%}
      {%- do adapter.drop_relation(rel) -%}
    {%- endif -%}
  {%- endfor -%}
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
