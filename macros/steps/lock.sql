{#- The table's commit lock: one run at a time switches, records, re-declares
    or swaps a table; every other step of a run (the query, the write, its
    check) runs beside other runs. Built from catalog entries of unique names
    (views of `select 1`), so no statement here fails because another run made
    the same one at the same moment, on any metastore: Lamport's bakery. A run
    marks itself choosing (`<alias>__dbt_lock_c_<epoch>_<run>`), takes a
    ticket one above every ticket listed (`<alias>__dbt_lock_t<n>_<epoch>_<run>`),
    drops its mark, then holds the lock once a listing shows no run choosing
    and no smaller ticket (ties by run id); a run whose first listing shows
    no other run holds it by its mark (take_ticket). An entry older than
    commit_lock_expiry is a dead run's and is dropped; a run that fails in
    its commit through the package's own errors releases it
    (release_held_lock). -#}

{% macro lock_prefix(alias) %}
  {{ return(alias | lower ~ '__dbt_lock_') }}
{% endmacro %}

{% macro side_listing(schema_relation, alias) %}
  {#- The names of the entries beside `alias`'s table (`<alias>__dbt_*`: lock entries and runs' side entries), one SHOW TABLES. -#}
  {{ return(run_query('show tables in ' ~ schema_relation.schema ~ " like '" ~ alias | lower ~ "__dbt_*'").columns[1].values() | list) }}
{% endmacro %}

{% macro lock_entries(schema_relation, alias, names=none) %}
  {#- The lock entries of `alias`'s table: [{'name', 'ticket' (none for a
      choosing mark), 'epoch', 'run'}], from `names` (side_listing; listed
      here when none). -#}
  {%- set prefix = spark_bucketing.lock_prefix(alias) -%}
  {%- set pattern = '^' ~ modules.re.escape(prefix) ~ '(c|t([0-9]+))_([0-9]+)_(r[0-9]+_[0-9a-f]{12})$' -%}
  {%- set out = [] -%}
  {%- for name in (names if names is not none else spark_bucketing.side_listing(schema_relation, alias)) -%}
    {%- set m = modules.re.match(pattern, name) -%}
    {%- if m -%}
      {%- do out.append({'name': name, 'ticket': m.group(2) | int if m.group(2) else none, 'epoch': m.group(3) | int, 'run': m.group(4)}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro lock_entry(rels, name) %}
  {{ return(api.Relation.create(identifier=name, schema=rels.target.schema, database=rels.target.database, type='view')) }}
{% endmacro %}

{% macro create_lock_entry(rels, name) %}
  {%- call statement('spark_bucketing_lock') -%}create view {{ spark_bucketing.lock_entry(rels, name) }} as select 1 as held{%- endcall -%}
{% endmacro %}

{% macro drop_lock_entry(rels, name) %}
  {%- call statement('spark_bucketing_lock') -%}drop view if exists {{ spark_bucketing.lock_entry(rels, name) }}{%- endcall -%}
{% endmacro %}

{% macro mark_lock_statement() %}
  {#- The extension's statement that marks a run choosing (mark_choosing); tied to MarkLockStatement in scala/Contracts.scala. -#}
  {{ return('spark_bucketing mark lock') }}
{% endmacro %}

{% macro mark_choosing(rels, name) %}
  {#- Creates the run's choosing mark `name`, then lists the entries beside
      the table: {'names': side_listing's names, 'properties': the table's
      properties read after the listing, 'partitions': its partitions'
      paths read after it, or none for both (so before the table exists)}.
      With the session extension (rels.extension) one statement does the
      four (each a round trip of a remote client): a run that holds the
      lock by its mark starts its commit from what it read (commit_state). -#}
  {%- if rels.get('extension') -%}
    {%- set rows = run_query(spark_bucketing.mark_lock_statement() ~ ' ' ~ rels.target ~ ' entry ' ~ name).rows -%}
    {%- set props = spark_bucketing.kind_properties(rows, 'property') -%}
    {{ return({'names': rows | selectattr('0', 'equalto', 'entry') | map(attribute='1') | list, 'properties': props,
               'partitions': rows | selectattr('0', 'equalto', 'partition') | map(attribute='1') | list if props is not none else none}) }}
  {%- endif -%}
  {%- do spark_bucketing.create_lock_entry(rels, name) -%}
  {{ return({'names': spark_bucketing.side_listing(rels.target, rels.target.identifier), 'properties': none, 'partitions': none}) }}
{% endmacro %}

{% macro choosing_mark(rels) %}
  {#- The name of the run's mark as it chooses its ticket (take_ticket), made now. -#}
  {{ return(spark_bucketing.lock_prefix(rels.target.identifier) ~ 'c_' ~ spark_bucketing.epoch_now() ~ '_' ~ rels.run_id) }}
{% endmacro %}

{% macro take_ticket(rels) %}
  {#- Marks the run choosing, then takes its ticket and drops the mark;
      returns {'name': the entry the run holds by, 'held': whether it holds
      the lock already}. A run whose listing after its mark shows no other
      run's entry holds the lock by its mark (3 statements in all, with the
      release, instead of 6): of two runs that mark themselves at once, the
      one that lists second sees the other's mark, so at most one sees
      none; and every other run waits while a mark stands. -#}
  {%- do spark_bucketing.forget_locked_reads(rels) -%}
  {%- set prefix = spark_bucketing.lock_prefix(rels.target.identifier) -%}
  {%- set choosing = spark_bucketing.choosing_mark(rels) -%}
  {%- set marked = spark_bucketing.mark_choosing(rels, choosing) -%}
  {#- The listing serves the cleanup of dead runs' side entries too (drop_dead_runs_entries). -#}
  {%- do rels.update({'side_listing': marked.names}) -%}
  {%- set others = spark_bucketing.lock_entries(rels.target, rels.target.identifier, marked.names) | rejectattr('run', 'equalto', rels.run_id) | list -%}
  {%- if not others -%}
    {%- if marked.properties is not none -%}
      {%- do rels.update({'locked_properties': marked.properties, 'locked_partitions': marked.partitions}) -%}
    {%- endif -%}
    {{ return({'name': choosing, 'held': true}) }}
  {%- endif -%}
  {%- set tickets = others | rejectattr('ticket', 'none') | map(attribute='ticket') | list -%}
  {%- set mine = prefix ~ 't' ~ '%06d' | format((tickets | max if tickets else 0) + 1) ~ '_' ~ spark_bucketing.epoch_now() ~ '_' ~ rels.run_id -%}
  {%- do spark_bucketing.create_lock_entry(rels, mine) -%}
  {%- do spark_bucketing.drop_lock_entry(rels, choosing) -%}
  {{ return({'name': mine, 'held': false}) }}
{% endmacro %}

{% macro lock_blocker(rels, entries, ticket) %}
  {#- The entry that keeps the run holding `ticket` from the lock (a run
      choosing, or a smaller ticket), or none: the run holds the lock. -#}
  {%- set mine = entries | selectattr('run', 'equalto', rels.run_id) | rejectattr('ticket', 'none') | first -%}
  {%- for e in entries if e.run != rels.run_id and (e.ticket is none or (e.ticket, e.run) < (mine.ticket, mine.run)) -%}
    {{ return(e) }}
  {%- endfor -%}
  {{ return(none) }}
{% endmacro %}

{% macro acquire_commit_lock(rels) %}
  {#- Waits until this run holds the table's commit lock (at most
      commit_lock_wait seconds, polling each second), dropping the entries
      of dead runs (older than commit_lock_expiry) on the way. -#}
  {%- set taken = spark_bucketing.take_ticket(rels) -%}
  {%- set ticket = taken.name -%}
  {%- set ns = namespace(blocker=none, held=taken.held, ticket=ticket) -%}
  {%- for attempt in range(spark_bucketing.commit_lock_wait() + 1) if not ns.held -%}
    {%- if attempt > 0 -%}{%- do spark_bucketing.sleep_seconds(1) -%}{%- endif -%}
    {%- set entries = spark_bucketing.lock_entries(rels.target, rels.target.identifier) -%}
    {%- set expired = entries | rejectattr('run', 'equalto', rels.run_id) | selectattr('epoch', 'lt', spark_bucketing.epoch_now() - spark_bucketing.commit_lock_expiry()) | list -%}
    {%- for e in expired -%}
      {%- do log("spark_bucketing: " ~ rels.target ~ ": dropping the lock entry " ~ e.name ~ " of run " ~ e.run
          ~ ", older than commit_lock_expiry (" ~ spark_bucketing.commit_lock_expiry() ~ " s): its run died", info=true) -%}
      {%- do spark_bucketing.drop_lock_entry(rels, e.name) -%}
    {%- endfor -%}
    {%- set ns.blocker = spark_bucketing.lock_blocker(rels, entries | reject('in', expired) | list, ticket) -%}
    {%- set ns.held = ns.blocker is none -%}
    {%- set ns.ticket = spark_bucketing.refreshed_entry(rels, ns.ticket) -%}
  {%- endfor -%}
  {%- set ticket = ns.ticket -%}
  {%- if not ns.held -%}
    {%- do spark_bucketing.drop_lock_entry(rels, ticket) -%}
    {%- do spark_bucketing.model_error("waited commit_lock_wait (" ~ spark_bucketing.commit_lock_wait() ~ " s) for the commit lock of "
        ~ rels.target ~ ", held by run " ~ ns.blocker.run ~ " (entry " ~ ns.blocker.name ~ "). This run published nothing: rerunning is safe."
        ~ " Raise commit_lock_wait to wait longer; if no run of this model is alive, drop view " ~ rels.target.schema ~ "." ~ ns.blocker.name) -%}
  {%- endif -%}
  {%- do spark_bucketing.hold_commit_lock(rels, ticket) -%}
{% endmacro %}

{% macro hold_commit_lock(rels, name) %}
  {#- The run holds the commit lock by its entry `name`: the release
      (release_commit_lock, an end of the commit) and a failing statement
      (release_lock_on_failure) drop it. -#}
  {%- do rels.update({'lock_ticket': name}) -%}
  {%- do model.update({'spark_bucketing_lock_entry': spark_bucketing.lock_entry(rels, name) | string}) -%}
{% endmacro %}

{% macro release_commit_lock(rels) %}
  {%- do spark_bucketing.drop_lock_entry(rels, rels.lock_ticket) -%}
  {%- do spark_bucketing.forget_commit_lock(rels) -%}
{% endmacro %}

{% macro forget_commit_lock(rels) %}
  {#- After a statement that released the lock (end_commit). -#}
  {%- do rels.pop('lock_ticket') -%}
  {%- do spark_bucketing.forget_locked_reads(rels) -%}
  {%- do model.pop('spark_bucketing_lock_entry', none) -%}
{% endmacro %}

{% macro forget_locked_reads(rels) %}
  {#- What a run read with its lock's mark (mark_choosing), unused: read again where it is needed. -#}
  {%- do rels.pop('locked_properties', none) -%}
  {%- do rels.pop('locked_partitions', none) -%}
{% endmacro %}

{% macro entry_epoch(name) %}
  {{ return(modules.re.search('_([0-9]+)_r[0-9]+_[0-9a-f]{12}$', name).group(1) | int) }}
{% endmacro %}

{% macro refreshed_entry(rels, name) %}
  {#- A waiting run's entry, renewed (the same ticket, the time of now)
      once it is a third of commit_lock_expiry old, so that no other run
      takes a live run that waits long for a dead one; returns its name. -#}
  {%- if spark_bucketing.entry_epoch(name) > spark_bucketing.epoch_now() - spark_bucketing.commit_lock_expiry() // 3 -%}{{ return(name) }}{%- endif -%}
  {%- set renewed = modules.re.sub('_[0-9]+_(r[0-9]+_[0-9a-f]{12})$', '_' ~ spark_bucketing.epoch_now() ~ '_\\1', name) -%}
  {%- do spark_bucketing.create_lock_entry(rels, renewed) -%}
  {%- do spark_bucketing.drop_lock_entry(rels, name) -%}
  {{ return(renewed) }}
{% endmacro %}

{% macro check_lock_held(rels) %}
  {#- Right before a swap or switch: a run that held the lock longer than
      commit_lock_expiry may have lost it to a run that took its entry for a
      dead run's, and then publishes nothing. One SHOW TABLES, once the
      entry is half as old as commit_lock_expiry (no run takes a younger
      one; keep the clocks of the machines that run dbt within seconds). -#}
  {%- if spark_bucketing.entry_epoch(rels.lock_ticket) > spark_bucketing.epoch_now() - spark_bucketing.commit_lock_expiry() // 2 -%}
    {{ return(none) }}
  {%- endif -%}
  {%- set names = spark_bucketing.lock_entries(rels.target, rels.target.identifier) | map(attribute='name') | list -%}
  {%- if rels.lock_ticket not in names -%}
    {%- do model.pop('spark_bucketing_lock_entry', none) -%}
    {%- do spark_bucketing.model_error("this run held the commit lock of " ~ rels.target ~ " longer than commit_lock_expiry ("
        ~ spark_bucketing.commit_lock_expiry() ~ " s), and another run took it for a dead run's. This run published nothing."
        ~ " Rerunning is safe; raise commit_lock_expiry above the longest commit of this model") -%}
  {%- endif -%}
{% endmacro %}
