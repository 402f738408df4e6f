{#- The package's end of a dbt command, which its dbt plugin runs after the
    command's models (spark_bucketing/dbt_run_end.py), or a project's own
    on-run-end hook that calls it ("{{ spark_bucketing.end_of_run(results) }}",
    as the README asked before). The package declares no hook of its own,
    which would add a result to every command of every project that
    installs it. A model that failed on an error the package cannot
    catch (a statement failing in Spark or the metastore) while it held its
    table's commit lock releases it here, so other runs do not wait
    commit_lock_expiry for it; and its side entries (and a full build's
    folder) go at once instead of after leftover_grace_period. A run killed
    outright leaves its entries until they expire. A run that wrote a
    Hive-hash table without the session extension says, once, what that
    costs. release_failed_runs_locks alone is the hook the package asked
    for before. -#}

{% macro end_of_run(results, extension=none, routed=true) %}
  {#- `extension`: whether the session runs the extension, where the caller
      knows (the plugin, for a `method: session` target), else asked of
      Spark; `routed`: whether the project routes dbt-spark's `incremental`
      with buckets to the package (a project's hook cannot tell: it may). -#}
  {%- do spark_bucketing.release_failed_runs_locks(results) -%}
  {%- do spark_bucketing.say_what_runs_without_the_extension(results, extension, routed) -%}
{% endmacro %}

{% macro say_what_runs_without_the_extension(results, extension=none, routed=true) %}
  {#- Once per dbt command that wrote a Hive-hash table in a session without
      the session extension (a Thrift Server that does not load it, or
      SPARK_BUCKETING_EXTENSION=off): what those tables lose, and how to load
      it. One SET, only where such a table was written and `extension` is
      not known (end_of_run). -#}
  {%- set written = [] -%}
  {%- for res in results if res.status == 'success' and res.node.resource_type == 'model'
        and (res.node.config.materialized in ('bucketed_table', 'bucketed_incremental') or routed and spark_bucketing.is_bucketed_incremental(res.node.config))
        and res.node.config.get('bucket_hash', 'hive') == 'hive' -%}
    {%- do written.append(res.node.name) -%}
  {%- endfor -%}
  {%- if written and not (extension if extension is not none else spark_bucketing.extension_active()) -%}
    {%- do log("spark_bucketing: " ~ written | length ~ " Hive-hash table(s) (" ~ written[:5] | join(', ') ~ (', ...' if written | length > 5 else '')
        ~ ") written by a Spark that does not load the package's session extension. Spark reads them unbucketed"
        ~ " (their joins and aggregations on the bucket key shuffle), and each partition an incremental run"
        ~ " replaces costs one more statement (LOAD DATA, about a second) to keep its bucket spec for Trino and Hive."
        ~ " Load the extension where Spark runs: `spark-bucketing extension` (on that machine) builds its jar and"
        ~ " prints its path; add to the server's configuration (a Thrift Server's --conf):\n"
        ~ "    spark.jars=<that jar>  (and spark.driver.extraClassPath=<that jar>)\n"
        ~ "    spark.sql.extensions=" ~ spark_bucketing.extension_class(), info=true) -%}
  {%- endif -%}
{% endmacro %}

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
