{#- The SQL of a merge by unique_key: how new rows match the table's rows,
    and the merged rows. -#}

{% macro stored_columns(columns, merge) %}
  {#- The columns the table stores: the query's, less the delete marker. -#}
  {%- set out = {} -%}
  {%- for name, data_type in columns.items() if merge is none or name != merge.delete_column -%}{%- do out.update({name: data_type}) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro kept_rows_sql(sql, columns, merge) -%}
  {#- A first build's rows: the query's, less the rows marked for delete (there is nothing to delete yet). -#}
  {%- if merge is none or merge.delete_column is none -%}{{ sql }}
  {%- else -%}
  select {{ spark_bucketing.quoted(columns.keys() | list) | join(', ') }} from ({{ sql }}) as __sb_model
  where not coalesce({{ spark_bucketing.quoted([merge.delete_column])[0] }}, false)
  {%- endif -%}
{%- endmacro %}

{% macro co_partitioned(merge, spec) %}
  {#- Whether unique_key holds the bucket columns of a Spark-hash spec: the
      merge then joins on the bucket columns alone (key_match). -#}
  {%- set key_lower = merge.unique_key | map('lower') | list -%}
  {{ return(spec.bucket_hash == 'spark' and spec.clustered_by | map('lower') | reject('in', key_lower) | list | length == 0) }}
{% endmacro %}

{% macro merge_output_is_bucketed(merge, spec, info) %}
  {#- True when the merge join's tasks are the table's buckets: a
      co-partitioned merge into a table that declares this very spec, read
      bucketed (spark.sql.sources.bucketing.enabled). Spark then shuffles the
      new rows into the table's bucket count by the same Murmur3 hash as the
      bucket id, so join task b holds exactly the rows of bucket b, old and
      new, and the write needs no shuffle of its own. This rests on how Spark
      plans the join, so it is taken only when the layout check (verify_layout)
      checks every new file before anything is published: Spark's writer
      still names each file by its rows' bucket, so a task that held rows
      of several buckets, or two tasks one bucket's, leaves more than one
      file for a bucket, which the check finds. -#}
  {%- if not spec.verify_layout or not spark_bucketing.co_partitioned(merge, spec) -%}{{ return(false) }}{%- endif -%}
  {%- if not spark_bucketing.same_spec(spark_bucketing.declared_spec(info), spark_bucketing.spec_record(spec)) -%}{{ return(false) }}{%- endif -%}
  {{ return(spark_bucketing.get_conf('spark.sql.sources.bucketing.enabled') | lower == 'true') }}
{% endmacro %}

{% macro key_match(merge, spec=none) -%}
  {#- The ON condition of a merge, as dbt writes it: equal keys (a NULL key
      matches nothing) and the incremental_predicates. Given the `spec` of a
      Spark-hash table whose bucket columns unique_key holds, only the bucket
      columns are join keys, the other key columns a condition of the join
      (coalesce(.., false) keeps Spark from taking them as keys): Spark then
      reads the table bucketed, with no shuffle. Joined on all key columns,
      it would shuffle both sides (spark.sql.requireAllClusterKeysForCoPartition). -#}
  {%- set co_partition = spec is not none and spark_bucketing.co_partitioned(merge, spec) -%}
  {%- set bucket_lower = spec.clustered_by | map('lower') | list if co_partition else [] -%}
  {%- for name in merge.unique_key -%}
    {%- set k = spark_bucketing.quoted([name])[0] -%}
    {%- if not co_partition or name | lower in bucket_lower -%}
    DBT_INTERNAL_SOURCE.{{ k }} = DBT_INTERNAL_DEST.{{ k }}
    {%- else -%}
    coalesce(DBT_INTERNAL_SOURCE.{{ k }} = DBT_INTERNAL_DEST.{{ k }}, false)
    {%- endif -%}{{ ' and ' if not loop.last }}
  {%- endfor -%}
  {%- for p in merge.predicates %} and ({{ p }}){% endfor -%}
{%- endmacro %}

{% macro merge_sql(target, staged, columns, merge, spec, scope) -%}
  {{ return(adapter.dispatch('merge_sql', 'spark_bucketing')(target, staged, columns, merge, spec, scope)) }}
{%- endmacro %}
{% macro default__merge_sql(target, staged, columns, merge, spec, scope) -%}
  {#- The merged rows of the partitions in `scope` (none: the whole table),
      from one full outer join of the table's rows with the new rows: a row
      no new row matches is kept; a matched row takes the update columns of
      the new row and keeps the others; a new row no table row matches is
      inserted; a new row marked for delete removes its match and is not
      written. Where unique_key holds the bucket columns of a Spark-hash
      table, the table's side is read bucketed and not shuffled (key_match). -#}
  {%- set update_lower = merge.update_columns | map('lower') | list %}
  select
  {%- for name in columns %}
    {%- set col = spark_bucketing.quoted([name])[0] %}
    {%- if name | lower in update_lower %}
    case when DBT_INTERNAL_SOURCE.__sb_new then DBT_INTERNAL_SOURCE.{{ col }} else DBT_INTERNAL_DEST.{{ col }} end as {{ col }}
    {%- else %}
    case when DBT_INTERNAL_DEST.__sb_old then DBT_INTERNAL_DEST.{{ col }} else DBT_INTERNAL_SOURCE.{{ col }} end as {{ col }}
    {%- endif %}{{ ',' if not loop.last }}
  {%- endfor %}
  from (select *, true as __sb_old from {{ target }}
        {%- if scope is not none %} where {{ spark_bucketing.partition_match(spec.partition_by, scope) }}{% endif %}) as DBT_INTERNAL_DEST
  full outer join (select *, true as __sb_new from {{ staged }}) as DBT_INTERNAL_SOURCE
    on {{ spark_bucketing.key_match(merge, spec) }}
  {%- if merge.delete_column %}
  where not coalesce(DBT_INTERNAL_SOURCE.{{ spark_bucketing.quoted([merge.delete_column])[0] }}, false)
  {%- endif %}
{%- endmacro %}
