{#- What a merge reads before it writes: the new rows checked (one row per
    key, deletes of keys the table holds), the partitions it rewrites, and
    its row accounting. Bad new rows fail the run with only the staged rows
    written, and those dropped. -#}

{% macro merge_input_error(rels, staged, location, config_name, problem, fix) %}
  {#- Bad new rows: the staged rows are dropped, nothing else was written. -#}
  {%- if staged.relation is not none -%}{%- do adapter.drop_relation(staged.relation) -%}{%- endif -%}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do spark_bucketing.config_error(config_name, problem, fix) -%}
{% endmacro %}

{% macro check_new_keys(rels, staged, location, merge) %}
  {#- Before anything is published: one new row per unique_key. Names up to 10 keys that repeat. -#}
  {%- set keys = spark_bucketing.quoted(merge.unique_key) | join(', ') -%}
  {%- set rows = run_query('select ' ~ keys ~ ', count(*) as __sb_n from ' ~ staged.source ~ ' group by ' ~ keys ~ ' having count(*) > 1 limit 10') -%}
  {%- if rows | length > 0 -%}
    {%- set found = [] -%}
    {%- for row in rows -%}{%- do found.append('(' ~ (row.values()[:-1] | join(', ')) ~ '): ' ~ row[-1] ~ ' rows') -%}{%- endfor -%}
    {%- do spark_bucketing.merge_input_error(rels, staged, location, 'unique_key', "the new rows repeat keys " ~ (merge.unique_key | join(', ')) ~ ", e.g. " ~ (found | join('; ')),
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

{% macro check_deletes_exist(target, rels, staged, location, merge, partition_by, scope) %}
  {#- merge_validate_deletes: every key marked for delete must match a row of the table. -#}
  {%- set keys = [] -%}
  {%- for k in spark_bucketing.quoted(merge.unique_key) -%}{%- do keys.append('DBT_INTERNAL_SOURCE.' ~ k) -%}{%- endfor -%}
  {%- set query -%}
    select {{ keys | join(', ') }} from {{ staged.source }} as DBT_INTERNAL_SOURCE
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
    {%- do spark_bucketing.merge_input_error(rels, staged, location, 'merge_validate_deletes', "the new rows delete keys the table does not hold, e.g. " ~ (found | join(', ')),
        "check the change feed, or set merge_validate_deletes=false to ignore deletes of missing keys") -%}
  {%- endif -%}
{% endmacro %}


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
