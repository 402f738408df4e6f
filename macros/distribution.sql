{#- The write itself: route every (partition, bucket) to exactly one task, so
    that Spark's bucketed writer produces exactly one file per bucket. -#}

{% macro route_lookup_limit() %}{{ return(4096) }}{% endmacro %}

{% macro collision_free_routes(buckets) %}
  {#- For each bucket b, a small int r_b whose shuffle partition among `buckets`
      partitions is b (pmod(hash(int), n) is how REPARTITION places an int key).
      Routing bucket b by r_b gives every bucket a task of its own. Returns none
      if some bucket found no candidate (then buckets may share tasks, which
      keeps one file per bucket but spreads the work less evenly). -#}
  {%- set rows = run_query(
      'select pmod(hash(cast(id as int)), ' ~ buckets ~ ') as b, min(cast(id as int)) as r from range(0, '
      ~ (buckets * 64) ~ ') group by 1') -%}
  {%- set routes = {} -%}
  {%- for row in rows -%}{%- do routes.update({row[0] | int: row[1] | int}) -%}{%- endfor -%}
  {%- if routes | length != buckets -%}{{ return(none) }}{%- endif -%}
  {%- set out = [] -%}
  {%- for b in range(buckets) -%}{%- do out.append(routes[b]) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro write_tasks(spec) %}
  {#- Unpartitioned: one task per bucket. Partitioned: (partition, bucket)
      pairs spread over at least as many tasks as the session would use. -#}
  {%- if not spec.partition_by -%}{{ return(spec.buckets) }}{%- endif -%}
  {%- set shuffle_partitions = spark_bucketing.get_conf('spark.sql.shuffle.partitions') -%}
  {%- set p = shuffle_partitions | int if shuffle_partitions is string and shuffle_partitions.isdigit() else 200 -%}
  {{ return([spec.buckets, p] | max) }}
{% endmacro %}

{% macro distributed_select_sql(spec, columns, sql) %}
  {{ return(adapter.dispatch('distributed_select_sql', 'spark_bucketing')(spec, columns, sql)) }}
{% endmacro %}

{% macro default__distributed_select_sql(spec, columns, sql) -%}
  {#- Columns in table order (partition columns last, as both table kinds store them). -#}
  {%- set partition_lower = spec.partition_by | map('lower') | list -%}
  {%- set ordered = [] -%}
  {%- for name in columns if name | lower not in partition_lower -%}{%- do ordered.append(name) -%}{%- endfor -%}
  {%- do ordered.extend(spec.partition_by) -%}
  {%- set bucket_id = spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, spec.bucket_hash) -%}
  {%- set routes = none -%}
  {%- if not spec.partition_by and spec.buckets <= spark_bucketing.route_lookup_limit() -%}
    {%- set routes = spark_bucketing.collision_free_routes(spec.buckets) -%}
  {%- endif -%}
  {%- set route = 'element_at(array(' ~ (routes | join(', ')) ~ '), ' ~ bucket_id ~ ' + 1)' if routes else bucket_id -%}
  {%- set keys = spark_bucketing.quoted(spec.partition_by) + ['__sb_route'] -%}
  select {{ spark_bucketing.quoted(ordered) | join(', ') }}
  from (
    select /*+ REPARTITION({{ spark_bucketing.write_tasks(spec) }}, {{ keys | join(', ') }}) */ *
    from (
      select *, {{ route }} as __sb_route
      from (
        {{ sql }}
      ) as __sb_source
    ) as __sb_routed
  ) as __sb_distributed
{%- endmacro %}
