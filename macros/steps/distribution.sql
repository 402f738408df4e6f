{#- The write itself: route every (partition, bucket) to exactly one task, so
    that Spark's bucketed writer produces exactly one file per bucket. -#}

{% macro route_column() %}
  {#- The column the rows are routed to their tasks by; tied to RouteColumn
      in scala/Contracts.scala (the extension drops the shuffle where the rows
      are in one task already: OneTaskRoutes). -#}
  {{ return('__sb_route') }}
{% endmacro %}

{% macro route_lookup_limit() %}{{ return(4096) }}{% endmacro %}

{% macro collision_free_routes(tasks) %}
  {#- For each task t, a small int r_t whose shuffle partition among `tasks`
      partitions is t (pmod(hash(int), n) is how REPARTITION places an int key).
      Routing bucket b by r_(b mod tasks) gives every task the same number
      of buckets, give or take one. Returns none if some task found no
      candidate (then tasks get buckets by hash: still one file per bucket,
      but the work spreads less evenly). -#}
  {%- set rows = run_query(
      'select pmod(hash(cast(id as int)), ' ~ tasks ~ ') as b, min(cast(id as int)) as r from range(0, '
      ~ (tasks * 64) ~ ') group by 1') -%}
  {%- set routes = {} -%}
  {%- for row in rows -%}{%- do routes.update({row[0] | int: row[1] | int}) -%}{%- endfor -%}
  {%- if routes | length != tasks -%}{{ return(none) }}{%- endif -%}
  {%- set out = [] -%}
  {%- for t in range(tasks) -%}{%- do out.append(routes[t]) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro write_tasks(spec) %}
  {#- An unpartitioned table's write task count: the session's shuffle
      partitions (the parallelism the user chose), no more than its buckets.
      A task may write several buckets: Spark's writer sorts its rows by
      bucket and writes one file per bucket, so one file per bucket holds
      for any count, and the count need not grow with the buckets (100,000
      buckets would be 100,000 tasks). -#}
  {%- set shuffle_partitions = spark_bucketing.get_conf('spark.sql.shuffle.partitions') -%}
  {%- set p = shuffle_partitions | int if shuffle_partitions is string and shuffle_partitions.isdigit() else 200 -%}
  {{ return([spec.buckets, p] | min) }}
{% endmacro %}

{% macro partition_columns_last(columns, partition_by) %}
  {#- Column names in table order: partition columns last, as both table kinds store them. -#}
  {%- set partition_lower = partition_by | map('lower') | list -%}
  {%- set ordered = [] -%}
  {%- for name in columns if name | lower not in partition_lower -%}{%- do ordered.append(name) -%}{%- endfor -%}
  {%- do ordered.extend(partition_by) -%}
  {{ return(ordered) }}
{% endmacro %}

{% macro distributed_select_sql(spec, columns, sql) %}
  {{ return(adapter.dispatch('distributed_select_sql', 'spark_bucketing')(spec, columns, sql)) }}
{% endmacro %}

{% macro default__distributed_select_sql(spec, columns, sql) -%}
  {%- set ordered = spark_bucketing.partition_columns_last(columns, spec.partition_by) -%}
  {#- 'route_hash_function' (hive_writer_routed): the rows go where the writer puts them. -#}
  {%- set bucket_id = spark_bucketing.hive_bucket_sql(spec.route_hash_function, spec.clustered_by, spec.buckets)
      if spec.get('route_hash_function') else
      spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, spec.bucket_hash, spec.get('bucketing_version', 1)) -%}
  {%- set route_column = spark_bucketing.route_column() -%}
  {%- set keys = spark_bucketing.quoted(spec.partition_by) + [route_column] -%}
  {#- A partitioned table's write names no task count: the shuffle has the
      session's shuffle partitions, and AQE may coalesce it to the data's
      size. Coalescing joins whole partitions, so a (partition, bucket) still
      lands in exactly one task, and a one-day run writes from one task
      instead of n. An unpartitioned table's routes are computed for exactly
      `tasks` partitions, so there the count is explicit (and never coalesced). -#}
  {%- set route = bucket_id -%}
  {%- set count = '' -%}
  {%- if not spec.partition_by -%}
    {%- set tasks = spark_bucketing.write_tasks(spec) -%}
    {%- set count = tasks ~ ', ' -%}
    {%- set routes = spark_bucketing.collision_free_routes(tasks) if tasks <= spark_bucketing.route_lookup_limit() else none -%}
    {%- if routes -%}
      {%- set route = 'element_at(array(' ~ (routes | join(', ')) ~ '), ' ~ bucket_id ~ ' % ' ~ tasks ~ ' + 1)' -%}
    {%- endif -%}
  {%- endif -%}
  select {{ spark_bucketing.quoted(ordered) | join(', ') }}
  from (
    select /*+ REPARTITION({{ count }}{{ keys | join(', ') }}) */ *
    from (
      select *, {{ route }} as {{ route_column }}
      from (
        {{ sql }}
      ) as __sb_source
    ) as __sb_routed
  ) as __sb_distributed
{%- endmacro %}
