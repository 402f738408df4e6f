{#- What runs that died part-way left behind: a half-done swap, side
    entries, a full build's folder. -#}

{% macro recover(rels) %}
  {#- Repairs what a run that died part-way left behind; returns the target
      relation (or none). A swap stopped between its two renames (the table
      missing, its backup there) is repaired under the commit lock, which
      every swap holds: a live swap is never taken for a dead one. Only
      catalog entries are dropped here: every table involved is external,
      so their files stay. (Side entries of dead runs go in the commit:
      drop_dead_runs_entries.) -#}
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
  {{ return(target) }}
{% endmacro %}

{% macro drop_dead_runs_entries(rels, roles=none, grace=none, names=none) %}
  {#- Drops the side entries of other runs of this model in `roles`
      (run_side_roles' names; all by default) that started more than `grace`
      seconds ago (leftover_grace_period by default): a run that died left
      them (a live run is younger). A run that holds the commit lock passes
      the roles only a lock holder makes, and 0: they are dead runs'.
      `names`: the listing the run took the lock with (side_listing), else
      one SHOW TABLES. -#}
  {%- set now = spark_bucketing.epoch_now() -%}
  {%- set grace = spark_bucketing.leftover_grace_period() if grace is none else grace -%}
  {%- set alias = rels.target.identifier | lower -%}
  {%- set suffixes = spark_bucketing.run_side_roles() | selectattr('0', 'in', roles or spark_bucketing.run_side_roles() | map(attribute='0') | list)
      | map(attribute='1') | join('|') -%}
  {%- set pattern = '^' ~ modules.re.escape(alias) ~ '(' ~ suffixes ~ ')_(r[0-9]+_[0-9a-f]{12})$' -%}
  {%- for name in (names if names is not none else spark_bucketing.side_listing(rels.target, alias)) -%}
    {%- set m = modules.re.match(pattern, name) -%}
    {%- set started = spark_bucketing.run_started_epoch(m.group(2)) if m and m.group(2) != rels.run_id else none -%}
    {%- if started is not none and started <= now - grace -%}
      {%- set rel = api.Relation.create(identifier=name, schema=rels.target.schema, database=rels.target.database, type='table') -%}
      {%- do log("spark_bucketing: dropping " ~ rel ~ ", left by a run that started " ~ (now - started) ~ " s ago and did not finish", info=true) -%}
      {%- do spark_bucketing.drop_side_entry(rels, rel, m.group(1), config.get('location_root')) -%}
    {%- endif -%}
  {%- endfor -%}
{% endmacro %}

{% macro drop_side_entry(rels, relation, suffix, location_root) %}
  {#- Drops a dead run's side entry `relation` (its role's `suffix`); a full
      build's side table (__dbt_tmp) is in a folder of its run's own
      (build_location), which goes too. -#}
  {%- if suffix == '__dbt_tmp' -%}
    {%- set location = spark_bucketing.table_info(relation).location -%}
    {%- if spark_bucketing.owns_location(location, spark_bucketing.owned_locations({'location_root': location_root}, rels.target)) -%}
      {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
    {%- endif -%}
  {%- endif -%}
  {%- do adapter.drop_relation(relation) -%}
{% endmacro %}
