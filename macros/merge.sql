{#- incremental_strategy='merge' for bucketed_incremental: upserts and
    change-feed deletes by unique_key, on plain Parquet/ORC tables. A merge
    rewrites only the partitions its rows touch, through the same verified
    publish as insert_overwrite (write_partitions). -#}

{% macro merge_config(columns) %}
  {#- The merge configs, checked against the query's columns (name -> type):
      {unique_key, update_columns, delete_column, predicates, validate_deletes, row_accounting},
      column names spelled as the query spells them. -#}
  {%- set resolved = {} -%}
  {%- for config_name in ('unique_key', 'merge_update_columns', 'merge_exclude_columns', 'merge_delete_column') -%}
    {%- set names = spark_bucketing.column_list_config(config_name) -%}
    {%- if config_name == 'unique_key' and not names -%}
      {%- do spark_bucketing.config_error('unique_key', "is missing; incremental_strategy='merge' matches new rows to existing ones by it",
          "set unique_key to the column (or list of columns) that identifies a row, e.g. unique_key=['order_id']") -%}
    {%- endif -%}
    {%- do resolved.update({config_name: spark_bucketing.query_column_names(config_name, names, columns)}) -%}
  {%- endfor -%}
  {%- if resolved.merge_update_columns and resolved.merge_exclude_columns -%}
    {%- do spark_bucketing.config_error('merge_update_columns', "is set together with merge_exclude_columns",
        "set one of them: the columns a matched row takes from the new row, or the columns it keeps") -%}
  {%- endif -%}

  {%- set delete_column = resolved.merge_delete_column[0] if resolved.merge_delete_column else none -%}
  {%- if resolved.merge_delete_column | length > 1 -%}
    {%- do spark_bucketing.config_error('merge_delete_column', "names " ~ resolved.merge_delete_column | length ~ " columns", "name one boolean column") -%}
  {%- endif -%}
  {%- if delete_column is not none and columns[delete_column] | lower != 'boolean' -%}
    {%- do spark_bucketing.config_error('merge_delete_column', "column '" ~ delete_column ~ "' has type " ~ columns[delete_column]
        ~ "; it must be boolean (true: delete the row with this unique_key)",
        "select a boolean, e.g. op = 'D' as " ~ delete_column) -%}
  {%- endif -%}
  {%- if delete_column is not none and delete_column | lower in resolved.unique_key | map('lower') | list -%}
    {%- do spark_bucketing.config_error('merge_delete_column', "column '" ~ delete_column ~ "' is also in unique_key", "use a column of its own") -%}
  {%- endif -%}

  {#- What a matched row takes from the new row; the rest it keeps. -#}
  {%- set stored = columns.keys() | reject('equalto', delete_column) | list -%}
  {%- set update_columns = resolved.merge_update_columns if resolved.merge_update_columns
      else stored | reject('in', resolved.merge_exclude_columns) | list -%}

  {%- set predicates = config.get('incremental_predicates') or [] -%}
  {%- if predicates is string -%}{%- set predicates = [predicates] -%}{%- endif -%}
  {%- set flags = {} -%}
  {%- for config_name in ('merge_validate_deletes', 'merge_row_accounting') -%}
    {%- set value = config.get(config_name, false) -%}
    {%- if value is not boolean -%}
      {%- do spark_bucketing.config_error(config_name, "must be true or false, got " ~ value, "set " ~ config_name ~ "=true or false") -%}
    {%- endif -%}
    {%- do flags.update({config_name: value}) -%}
  {%- endfor -%}
  {%- set validate = flags.merge_validate_deletes -%}
  {%- if validate and delete_column is none -%}
    {%- do spark_bucketing.config_error('merge_validate_deletes', "is true but merge_delete_column is not set", "set merge_delete_column to the column that marks deletes") -%}
  {%- endif -%}
  {{ return({'unique_key': resolved.unique_key, 'update_columns': update_columns, 'delete_column': delete_column,
             'predicates': predicates, 'validate_deletes': validate, 'row_accounting': flags.merge_row_accounting}) }}
{% endmacro %}

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
      reads every new file before anything is published. -#}
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

{% macro merge_input_error(rels, location, config_name, problem, fix) %}
  {#- Bad new rows: the staged rows are dropped, nothing else was written. -#}
  {%- do adapter.drop_relation(rels.new) -%}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do spark_bucketing.config_error(config_name, problem, fix) -%}
{% endmacro %}

{% macro check_new_keys(rels, location, merge) %}
  {#- Before anything is published: one new row per unique_key. Names up to 10 keys that repeat. -#}
  {%- set keys = spark_bucketing.quoted(merge.unique_key) | join(', ') -%}
  {%- set rows = run_query('select ' ~ keys ~ ', count(*) as __sb_n from ' ~ rels.new ~ ' group by ' ~ keys ~ ' having count(*) > 1 limit 10') -%}
  {%- if rows | length > 0 -%}
    {%- set found = [] -%}
    {%- for row in rows -%}{%- do found.append('(' ~ (row.values()[:-1] | join(', ')) ~ '): ' ~ row[-1] ~ ' rows') -%}{%- endfor -%}
    {%- do spark_bucketing.merge_input_error(rels, location, 'unique_key', "the new rows repeat keys " ~ (merge.unique_key | join(', ')) ~ ", e.g. " ~ (found | join('; ')),
        "return one row per key, e.g. the latest change per key with row_number() over (partition by "
        ~ (merge.unique_key | join(', ')) ~ " order by <change time> desc) = 1") -%}
  {%- endif -%}
{% endmacro %}

{% macro merge_scope(target, staged, staged_values, merge, partition_by) %}
  {#- The partitions a merge rewrites: those its new rows fall in, plus, when
      unique_key does not hold every partition column, those where a key of
      the new rows lives now (a row may move). Only then is the table read
      beyond the new rows' partitions: its unique_key columns, in the
      partitions that incremental_predicates on partition columns leave. -#}
  {%- set scope = [] -%}
  {%- for values in staged_values if none not in values.values() -%}{%- do scope.append(values) -%}{%- endfor -%}
  {%- set key_lower = merge.unique_key | map('lower') | list -%}
  {%- if partition_by | map('lower') | reject('in', key_lower) | list | length == 0 -%}{{ return(scope) }}{%- endif -%}
  {%- do exceptions.warn("spark_bucketing: model '" ~ model.unique_id ~ "': unique_key (" ~ (merge.unique_key | join(', '))
      ~ ") does not hold the partition columns (" ~ (partition_by | join(', ')) ~ "), so the merge reads the key columns of every partition"
      ~ (" that incremental_predicates leave" if merge.predicates else "")
      ~ " to find where each key lives. Add the partition columns to unique_key, or an incremental_predicate on them, to read less") -%}
  {%- set query -%}
    select distinct {% for p in partition_by %}cast(DBT_INTERNAL_DEST.{{ spark_bucketing.quoted([p])[0] }} as string) as __sb_p{{ loop.index0 }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ target }} as DBT_INTERNAL_DEST
    left semi join {{ staged }} as DBT_INTERNAL_SOURCE on {{ spark_bucketing.key_match(merge) }}
  {%- endset -%}
  {%- for row in run_query(query) -%}
    {%- set values = {} -%}
    {%- for p in partition_by -%}{%- do values.update({p: row['__sb_p' ~ loop.index0]}) -%}{%- endfor -%}
    {%- if not spark_bucketing.values_in(values, scope, partition_by) -%}{%- do scope.append(values) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(scope) }}
{% endmacro %}

{% macro check_deletes_exist(target, rels, location, merge, partition_by, scope) %}
  {#- merge_validate_deletes: every key marked for delete must match a row of the table. -#}
  {%- set keys = [] -%}
  {%- for k in spark_bucketing.quoted(merge.unique_key) -%}{%- do keys.append('DBT_INTERNAL_SOURCE.' ~ k) -%}{%- endfor -%}
  {%- set query -%}
    select {{ keys | join(', ') }} from {{ rels.new }} as DBT_INTERNAL_SOURCE
    left anti join (select * from {{ target }}
                    {%- if scope is not none %} where {{ spark_bucketing.partition_match(partition_by, scope) }}{% endif %}) as DBT_INTERNAL_DEST
      on {{ spark_bucketing.key_match(merge) }}
    where DBT_INTERNAL_SOURCE.{{ spark_bucketing.quoted([merge.delete_column])[0] }}
    limit 10
  {%- endset -%}
  {%- set rows = run_query(query) -%}
  {%- if rows | length > 0 -%}
    {%- set found = [] -%}
    {%- for row in rows -%}{%- do found.append('(' ~ (row.values() | join(', ')) ~ ')') -%}{%- endfor -%}
    {%- do spark_bucketing.merge_input_error(rels, location, 'merge_validate_deletes', "the new rows delete keys the table does not hold, e.g. " ~ (found | join(', ')),
        "check the change feed, or set merge_validate_deletes=false to ignore deletes of missing keys") -%}
  {%- endif -%}
{% endmacro %}

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

{% macro merge_row_accounting(target, staged, merge, partition_by, scope) %}
  {#- merge_row_accounting: what the merge does to each partition's rows,
      counted by a query of its own over the table's rows in `scope` and the
      staged new rows (the same match as merge_sql):
      {values_key: {rows_before, inserted, updated, deleted, moved_in, moved_out, rows_after}}.
      A matched row whose new partition differs moves out of one partition
      and into the other. -#}
  {%- set delete = 'coalesce(DBT_INTERNAL_SOURCE.' ~ spark_bucketing.quoted([merge.delete_column])[0] ~ ', false)' if merge.delete_column else 'false' -%}
  {%- set in_scope = (' where ' ~ spark_bucketing.partition_match(partition_by, scope)) if scope is not none else '' -%}
  {%- set query -%}
    select __sb_kind, {% for p in partition_by %}__sb_o{{ loop.index0 }}, __sb_n{{ loop.index0 }}, {% endfor %}count(*) as __sb_rows from (
      select 'before' as __sb_kind
        {%- for p in partition_by %}, cast({{ spark_bucketing.quoted([p])[0] }} as string) as __sb_o{{ loop.index0 }}, cast(null as string) as __sb_n{{ loop.index0 }}{% endfor %}
      from {{ target }}{{ in_scope }}
      union all
      select case when DBT_INTERNAL_DEST.__sb_old is null then 'inserted' when {{ delete }} then 'deleted' else 'updated' end
        {%- for p in partition_by %}
        {%- set q = spark_bucketing.quoted([p])[0] %}, cast(DBT_INTERNAL_DEST.{{ q }} as string), cast(DBT_INTERNAL_SOURCE.{{ q }} as string){% endfor %}
      from (select *, true as __sb_old from {{ target }}{{ in_scope }}) as DBT_INTERNAL_DEST
      right join {{ staged }} as DBT_INTERNAL_SOURCE on {{ spark_bucketing.key_match(merge) }}
      where DBT_INTERNAL_DEST.__sb_old is not null or not {{ delete }}
    ) as __sb_changes
    group by __sb_kind{% for p in partition_by %}, __sb_o{{ loop.index0 }}, __sb_n{{ loop.index0 }}{% endfor %}
  {%- endset -%}
  {%- set out = {} -%}
  {%- for row in run_query(query) -%}
    {%- set old, new = {}, {} -%}
    {%- for p in partition_by -%}{%- do old.update({p: row['__sb_o' ~ loop.index0]}) -%}{%- do new.update({p: row['__sb_n' ~ loop.index0]}) -%}{%- endfor -%}
    {%- set old_key = spark_bucketing.values_key(old, partition_by) -%}
    {%- set new_key = spark_bucketing.values_key(new, partition_by) -%}
    {%- set changes = [] -%}
    {%- if row['__sb_kind'] == 'before' -%}{%- do changes.append((old_key, 'rows_before')) -%}
    {%- elif row['__sb_kind'] == 'inserted' -%}{%- do changes.append((new_key, 'inserted')) -%}
    {%- elif row['__sb_kind'] == 'deleted' -%}{%- do changes.append((old_key, 'deleted')) -%}
    {%- elif old_key == new_key -%}{%- do changes.append((old_key, 'updated')) -%}
    {%- else -%}{%- do changes.extend([(old_key, 'moved_out'), (new_key, 'moved_in')]) -%}
    {%- endif -%}
    {%- for key, field in changes -%}
      {%- if key not in out -%}
        {%- do out.update({key: {'rows_before': 0, 'inserted': 0, 'updated': 0, 'deleted': 0, 'moved_in': 0, 'moved_out': 0}}) -%}
      {%- endif -%}
      {%- do out[key].update({field: out[key][field] + row['__sb_rows'] | int}) -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for key, a in out.items() -%}
    {%- do a.update({'rows_after': a.rows_before + a.inserted + a.moved_in - a.deleted - a.moved_out}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro accounting_text(a) %}
  {{ return('before ' ~ a.rows_before ~ ' + inserted ' ~ a.inserted ~ ' + moved in ' ~ a.moved_in
      ~ ' - deleted ' ~ a.deleted ~ ' - moved out ' ~ a.moved_out ~ ' = ' ~ a.rows_after) }}
{% endmacro %}

{% macro check_row_accounting(relation, location, rels, partition_by, stats, accounting) %}
  {#- Before anything is published: each partition the merge wrote (or
      emptied) holds the rows its accounting expects. -#}
  {%- set written = {} -%}
  {%- for s in stats -%}{%- do written.update({spark_bucketing.values_key(s['values'], partition_by): s}) -%}{%- endfor -%}
  {%- set wrong = [] -%}
  {%- for key in (accounting.keys() | list + written.keys() | list) | unique | sort -%}
    {%- set a = accounting.get(key) -%}
    {%- set expected = a.rows_after if a is not none else 0 -%}
    {%- set found = written[key].rows if key in written else 0 -%}
    {%- if expected != found -%}
      {%- set name = written[key].path if key in written else (key if partition_by else 'the table') -%}
      {%- do wrong.append(name ~ ': ' ~ (spark_bucketing.accounting_text(a) if a is not none else 'no rows expected')
          ~ ', but ' ~ found ~ ' rows were written') -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if wrong -%}
    {%- do spark_bucketing.discard(relation, location, rels, "merge_row_accounting: the merged rows do not add up in "
        ~ (wrong | length) ~ " partitions, so nothing was published:\n  " ~ (wrong[:20] | join('\n  '))) -%}
  {%- endif -%}
{% endmacro %}
