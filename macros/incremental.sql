{#- Incremental writes of bucketed tables: what to write, and publishing new
    partitions into an existing table. -#}

{% macro incremental_config(spec) %}
  {%- set strategy = config.get('incremental_strategy') or 'insert_overwrite' -%}
  {%- if strategy not in ('insert_overwrite', 'append', 'merge') -%}
    {%- do spark_bucketing.config_error('incremental_strategy', "must be 'insert_overwrite', 'append' or 'merge', got '" ~ strategy ~ "'",
        "use insert_overwrite (replace the partitions the new rows fall in), append (add rows; touched partitions are rewritten) or merge (upsert and delete by unique_key)") -%}
  {%- endif -%}
  {%- set on_change = config.get('on_bucket_change') or 'fail' -%}
  {%- if on_change not in ('fail', 'rebuild', 'evolve') -%}
    {%- do spark_bucketing.config_error('on_bucket_change', "must be 'fail', 'rebuild' or 'evolve', got '" ~ on_change ~ "'",
        "see the README's section on bucket spec changes") -%}
  {%- endif -%}
  {%- set partitions = config.get('partitions') -%}
  {%- if partitions is not none -%}
    {%- if strategy != 'insert_overwrite' or not spec.partition_by -%}
      {%- do spark_bucketing.config_error('partitions', "static partitions need incremental_strategy='insert_overwrite' and partition_by",
          "remove partitions, or set both") -%}
    {%- endif -%}
    {%- if partitions is string or partitions is mapping or partitions is not iterable -%}
      {%- set partitions = [partitions] -%}
    {%- endif -%}
    {%- set normalized = [] -%}
    {%- for p in partitions -%}
      {%- if p is mapping -%}
        {%- if p.keys() | map('lower') | sort | list != spec.partition_by | map('lower') | sort | list -%}
          {%- do spark_bucketing.config_error('partitions', "entry " ~ p ~ " must give a value for each of " ~ (spec.partition_by | join(', ')),
              "write each entry as {" ~ (spec.partition_by | join(": ..., ")) ~ ": ...}") -%}
        {%- endif -%}
        {%- do normalized.append(p) -%}
      {%- elif spec.partition_by | length == 1 and p is not none -%}
        {%- do normalized.append({spec.partition_by[0]: p}) -%}
      {%- else -%}
        {%- do spark_bucketing.config_error('partitions', "entry " ~ p ~ " is not a mapping of partition column to value",
            "write e.g. partitions=[{'order_date': '2024-06-01'}]") -%}
      {%- endif -%}
    {%- endfor -%}
    {%- set partitions = normalized -%}
  {%- endif -%}
  {{ return({'strategy': strategy, 'on_bucket_change': on_change, 'partitions': partitions}) }}
{% endmacro %}

{% macro static_values(spec, partitions) %}
  {#- The static partitions as {partition column: value as string}. -#}
  {%- set out = [] -%}
  {%- for p in partitions or [] -%}
    {%- set v = {} -%}
    {%- for col in spec.partition_by -%}{%- do v.update({col: spark_bucketing.lookup_ci(p, col) | string}) -%}{%- endfor -%}
    {%- do out.append(v) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro static_filter_sql(sql, spec, partitions) -%}
  {#- The model's rows, failing the write if any falls outside the static partitions. -#}
  select * from ({{ sql }}) as __sb_new
  where case when {{ spark_bucketing.partition_match(spec.partition_by, spark_bucketing.static_values(spec, partitions)) }} then true
        else raise_error('spark_bucketing: model {{ model.unique_id }} returned a row outside its static partitions (config partitions)') end
{%- endmacro %}

{% macro needs_staging(strategy, spec, full_rebuild) %}
  {#- True when the rows to write read the model's rows more than once (to
      know which partitions they touch): they are then staged first, so that
      the model's query runs exactly once per run. -#}
  {{ return(spec.partition_by | length > 0 and (strategy == 'append' and not full_rebuild
                                                or strategy == 'insert_overwrite' and full_rebuild)) }}
{% endmacro %}

{% macro stage_new_rows(relation, columns, sql, location, partition_by) %}
  {#- Runs the model's query once into a plain side table at `location`,
      partitioned as the table is, so the catalog lists the partitions the
      new rows fall in (staged_partitions) without reading them. The folder
      is new: INSERT INTO, whatever the session's partitionOverwriteMode. -#}
  {%- set ordered = spark_bucketing.partition_columns_last(columns.keys() | list, partition_by) -%}
  {%- call statement('spark_bucketing_stage') -%}
    create table {{ relation }} (
    {%- for name in ordered %}
      {{ spark_bucketing.quoted([name])[0] }} {{ columns[name] }}{{ ',' if not loop.last }}
    {%- endfor %}
    ) using parquet
    {%- if partition_by %} partitioned by ({{ spark_bucketing.quoted(partition_by) | join(', ') }}){% endif %}
    location {{ spark_bucketing.sql_string(location) }}
  {%- endcall -%}
  {%- call statement('spark_bucketing_stage_rows') -%}
    insert into table {{ relation }}
    {%- if partition_by %} partition ({{ spark_bucketing.quoted(partition_by) | join(', ') }}){% endif %}
    select {{ spark_bucketing.quoted(ordered) | join(', ') }} from ({{ sql }}) as __sb_model
  {%- endcall -%}
{% endmacro %}

{% macro staged_partitions(relation) %}
  {#- The partition values the staged new rows fall in, from the catalog:
      [{column: value as string, or none for NULL}]. -#}
  {{ return(spark_bucketing.catalog_partitions(relation).values() | list) }}
{% endmacro %}

{% macro content_sql(strategy, spec, columns, new_rows, target, full_rebuild, touched=none) -%}
  {#- The rows to write. `new_rows` is the model's query, or the staged table
      when needs_staging() says the rows are read twice here. For a full
      rebuild of an existing table: the rows it keeps plus the new ones; for
      an incremental append: the new rows plus the existing rows of the
      partitions they fall in (`touched`, from staged_partitions: a literal
      filter, so Spark reads only those partitions of the table). -#}
  {%- set cols = spark_bucketing.quoted(columns.keys() | list) | join(', ') -%}
  {%- set keys = spark_bucketing.quoted(spec.partition_by) -%}
  {%- if target is none -%}
    {{ new_rows }}
  {%- elif strategy == 'append' and (full_rebuild or not spec.partition_by) -%}
    select {{ cols }} from {{ target }}
    union all
    select {{ cols }} from ({{ new_rows }}) as __sb_new
  {%- elif strategy == 'append' -%}
    select {{ cols }} from {{ new_rows }}
    union all
    select {{ cols }} from {{ target }}
    where {{ spark_bucketing.partition_match(spec.partition_by, touched) }}
  {%- elif full_rebuild and spec.partition_by -%}
    {#- insert_overwrite: keep the partitions the new rows do not touch. -#}
    select {{ cols }} from {{ target }} as __sb_old
    left anti join (select distinct {{ keys | join(', ') }} from {{ new_rows }}) as __sb_touched
      on {% for k in keys %}__sb_old.{{ k }} <=> __sb_touched.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
    union all
    select {{ cols }} from {{ new_rows }}
  {%- else -%}
    {{ new_rows }}
  {%- endif -%}
{%- endmacro %}

{% macro check_side_partitions(rels, location, stats, listed) %}
  {#- Before anything is published: every written partition has non-NULL
      values, and the side entry's catalog (`listed`) lists exactly the
      folders its files are in (the names the switch will use). -#}
  {%- for s in stats if none in s['values'].values() -%}
    {%- do spark_bucketing.discard(rels.incr, location, rels,
        "the new rows have a NULL partition value (" ~ s.path ~ "); bucketed_incremental needs non-NULL partition columns. Fix: coalesce them in the model") -%}
  {%- endfor -%}
  {%- set listed = listed.keys() | sort(case_sensitive=true) -%}
  {%- set found = stats | map(attribute='path') | sort(case_sensitive=true) -%}
  {%- if listed != found -%}
    {%- do spark_bucketing.discard(rels.incr, location, rels,
        "the written partition folders " ~ found ~ " differ from the partitions the catalog lists for them " ~ listed
        ~ "; nothing was published. Please report this with the partition values") -%}
  {%- endif -%}
{% endmacro %}

{% macro write_partitions(rels, info, meta, spec, columns, sql, replaced_partitions, bucketed_rows=false, accounting=none) %}
  {#- Writes the new partitions under the table's folder in _bucketing/<run>,
      verifies them, switches the table's partitions to them, verifies the
      switch. `replaced_partitions` (static partitions, a merge's scope) are
      replaced even where the new rows leave them empty: they are dropped.
      `bucketed_rows`: see build_bucketed_relation. `accounting`: a merge's
      row accounting (merge_row_accounting), checked against the written
      partitions and recorded with them. Reads only the
      partitions it writes. Returns what converge needs (the records of the
      listed partitions, the metadata keys of unlisted ones, the declared
      spec) and the replaced folders, which the caller deletes once
      everything is published. -#}
  {%- set location = info.location.rstrip('/') ~ '/_bucketing/' ~ invocation_id -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.incr, spec, columns, sql, location, bucketed_rows) -%}

  {#- The partitions the write replaces: those it wrote that the table lists,
      and replaced partitions it left empty. The check's own query lists
      their folders (only those partitions), so reading them costs no job. -#}
  {%- set listed = spark_bucketing.catalog_partitions(rels.incr) -%}
  {%- set catalog = spark_bucketing.catalog_partitions(rels.target) -%}
  {%- set to_replace = spark_bucketing.static_values(spec, replaced_partitions) -%}
  {%- set emptied = [] -%}
  {%- for path, values in catalog.items() if path not in listed and spark_bucketing.values_in(values, to_replace, spec.partition_by) -%}
    {%- do emptied.append(path) -%}
  {%- endfor -%}
  {%- set old_values = [] -%}
  {%- for path, values in catalog.items() if path in listed or path in emptied -%}{%- do old_values.append(values) -%}{%- endfor -%}
  {%- set other = spark_bucketing.files_sql(rels.target, spec.partition_by, old_values) if old_values else none -%}
  {%- set checked = spark_bucketing.verify_write(rels.incr, spec, location, rels, other) -%}
  {%- set stats = checked.stats -%}
  {%- do spark_bucketing.check_side_partitions(rels, location, stats, listed) -%}
  {%- if accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(rels.incr, location, rels, spec.partition_by, stats, accounting) -%}
  {%- endif -%}
  {%- set replaced = {} -%}
  {%- for s in checked.other -%}{%- do replaced.update({s.path: s}) -%}{%- endfor -%}
  {%- do spark_bucketing.checkpoint('after_write') -%}

  {#- Never let the catalog declare a spec these partitions would break. -#}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- if declared is not none and not spark_bucketing.same_spec(declared, spark_bucketing.spec_record(spec)) -%}
    {%- do spark_bucketing.redeclare(rels, rels.target, none, spec) -%}
    {%- set declared = none -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint('before_switch') -%}

  {%- set written = stats | map(attribute='path') | list -%}
  {%- do spark_bucketing.switch_partitions(rels.target, stats, catalog) -%}
  {%- set written_props = spark_bucketing.metadata_properties(spec, stats, accounting) -%}
  {%- do spark_bucketing.set_properties(rels.target, written_props) -%}
  {%- do spark_bucketing.verify_switch(rels, spec, stats, catalog, replaced) -%}

  {#- Replaced partitions the new rows left empty are dropped. -#}
  {%- for batch in emptied | batch(100) -%}
    {%- call statement('spark_bucketing_drop_partition') -%}
      alter table {{ rels.target }} drop if exists
      {%- for path in batch %} {{ spark_bucketing.partition_clause(catalog[path]) }}{{ ',' if not loop.last }}{% endfor %}
    {%- endcall -%}
  {%- endfor -%}
  {%- do adapter.drop_relation(rels.incr) -%}
  {%- do spark_bucketing.checkpoint('before_cleanup') -%}

  {#- The replaced folders, for the caller to delete: only those inside the table's own folder. -#}
  {%- set obsolete = [] -%}
  {%- for path, old in replaced.items() if spark_bucketing.is_under(old.location, info.location) -%}
    {%- do obsolete.append(old.location) -%}
  {%- endfor -%}

  {%- set records = {} -%}
  {%- set unlisted_keys = [] -%}
  {%- for path, rec in meta.partitions.items() -%}
    {%- if path in catalog and path not in emptied -%}{%- do records.update({path: rec}) -%}
    {%- else -%}{%- do unlisted_keys.append(meta['keys'][path]) -%}{%- endif -%}
  {%- endfor -%}
  {%- for path in catalog if path not in records and path not in emptied -%}{%- do records.update({path: none}) -%}{%- endfor -%}
  {%- for s in stats -%}{%- do records.update({s.path: fromjson(written_props[spark_bucketing.partition_key(s.path)])}) -%}{%- endfor -%}
  {%- set unlisted_keys = unlisted_keys | reject('in', written_props.keys() | list) | list -%}
  {{ return({'records': records, 'unlisted_keys': unlisted_keys, 'declared': declared, 'written': written, 'obsolete': obsolete}) }}
{% endmacro %}

{% macro switch_partitions(target, stats, catalog) %}
  {#- Points the table's partitions at their new, verified folders. Spark SQL
      sets one partition's location per statement, so each replaced partition
      takes one; new partitions are added 100 per statement. Each partition
      shows its old rows or its new ones at every moment. -#}
  {%- set statements = [] -%}
  {%- for s in stats if s.path in catalog -%}
    {%- do statements.append('alter table ' ~ target ~ ' ' ~ spark_bucketing.partition_clause(s['values'])
        ~ ' set location ' ~ spark_bucketing.sql_string(s.location)) -%}
  {%- endfor -%}
  {%- for batch in stats | rejectattr('path', 'in', catalog) | batch(100) -%}
    {%- set clauses = [] -%}
    {%- for s in batch -%}
      {%- do clauses.append(spark_bucketing.partition_clause(s['values']) ~ ' location ' ~ spark_bucketing.sql_string(s.location)) -%}
    {%- endfor -%}
    {%- do statements.append('alter table ' ~ target ~ ' add ' ~ (clauses | join(' '))) -%}
  {%- endfor -%}
  {%- for sql in statements -%}
    {%- call statement('spark_bucketing_switch_partition') -%}{{ sql }}{%- endcall -%}
    {%- if loop.first -%}{%- do spark_bucketing.checkpoint('mid_switch') -%}{%- endif -%}
  {%- endfor -%}
{% endmacro %}

{% macro verify_switch(rels, spec, stats, catalog, replaced) %}
  {#- Reads the switched partitions back through the table: each must show
      the folder, files and rows that were written. Otherwise the partitions
      that disagree are switched back to their old folders (still there) or
      dropped if they are new, and the run fails. A partition that held no
      files before is left on the new folder: it has no old rows to return. -#}
  {%- set after = {} -%}
  {%- for s in spark_bucketing.partition_stats(rels.target, spec.partition_by, stats | map(attribute='values') | list) -%}
    {%- do after.update({s.path: s}) -%}
  {%- endfor -%}
  {%- set wrong = [] -%}
  {%- for s in stats -%}
    {%- set a = after.get(s.path) -%}
    {%- if a is none or not spark_bucketing.same_location(a.location, s.location) or a.rows != s.rows or a.files != s.files -%}
      {%- do wrong.append(s.path ~ ': wrote ' ~ s.rows ~ ' rows in ' ~ s.files ~ ' files at ' ~ s.location ~ ', the table shows '
          ~ ((a.rows ~ ' rows in ' ~ a.files ~ ' files at ' ~ a.location) if a is not none else 'no rows')) -%}
      {%- if s.path in replaced -%}
        {%- call statement('spark_bucketing_switch_back') -%}
          alter table {{ rels.target }} {{ spark_bucketing.partition_clause(s['values']) }} set location {{ spark_bucketing.sql_string(replaced[s.path].location) }}
        {%- endcall -%}
      {%- elif s.path not in catalog -%}
        {%- call statement('spark_bucketing_switch_back') -%}
          alter table {{ rels.target }} drop if exists {{ spark_bucketing.partition_clause(s['values']) }}
        {%- endcall -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if wrong -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: model '" ~ model.unique_id ~ "': after switching partitions to their new folders, "
        ~ (wrong | length) ~ " did not show the rows written; they were switched back to their previous folders:\n  " ~ (wrong | join('\n  '))) -%}
  {%- endif -%}
{% endmacro %}

{% macro values_key(values, partition_by) %}
  {#- One string per partition: its values in partition_by order (column names in any case). -#}
  {%- set key = [] -%}
  {%- for col in partition_by -%}
    {%- set value = spark_bucketing.lookup_ci(values, col) -%}
    {%- do key.append(none if value is none else value | string) -%}
  {%- endfor -%}
  {{ return(tojson(key)) }}
{% endmacro %}

{% macro values_in(values, values_list, partition_by) %}
  {#- Whether partition `values` is one of `values_list`. -#}
  {%- set key = spark_bucketing.values_key(values, partition_by) -%}
  {%- for other in values_list if spark_bucketing.values_key(other, partition_by) == key -%}{{ return(true) }}{%- endfor -%}
  {{ return(false) }}
{% endmacro %}

{% macro check_incremental_target(spec, columns, info, meta, incr) %}
  {#- Checks an existing table against this run; returns true when the run
      must rebuild the table whole (on_bucket_change='rebuild', or a table
      this package did not build). Fails before any write otherwise. -#}
  {%- set fix = "run once with --full-refresh to rebuild the table" -%}
  {%- set table_cols = {} -%}
  {%- for name, type in info.columns.items() -%}{%- do table_cols.update({name | lower: type | lower}) -%}{%- endfor -%}
  {%- set query_cols = {} -%}
  {%- for name, type in columns.items() -%}{%- do query_cols.update({name | lower: type | lower}) -%}{%- endfor -%}
  {%- if table_cols != query_cols -%}
    {%- do spark_bucketing.config_error('columns', "the query's columns (" ~ query_cols ~ ") differ from the table's (" ~ table_cols ~ ")", fix) -%}
  {%- endif -%}
  {%- if info.partition_by | map('lower') | list != spec.partition_by | map('lower') | list -%}
    {%- do spark_bucketing.config_error('partition_by', "is " ~ spec.partition_by ~ " but the table is partitioned by " ~ info.partition_by, fix) -%}
  {%- endif -%}
  {%- if info.file_format != spec.file_format -%}
    {%- do spark_bucketing.config_error('file_format', "is '" ~ spec.file_format ~ "' but the table's files are " ~ info.file_format, fix) -%}
  {%- endif -%}

  {%- set old = meta.spec or spark_bucketing.declared_spec(info) -%}
  {%- if old is none or info.type != 'external' -%}
    {%- do log("spark_bucketing: " ~ this ~ " was not built by this package; rebuilding it whole", info=true) -%}
    {{ return(true) }}
  {%- endif -%}
  {%- set new = spark_bucketing.spec_record(spec) -%}
  {%- if spark_bucketing.same_spec(old, new) -%}{{ return(false) }}{%- endif -%}

  {%- if incr.on_bucket_change == 'fail' -%}
    {%- do spark_bucketing.config_error('on_bucket_change', "the bucket spec changed from " ~ spark_bucketing.describe_spec(old)
        ~ " to " ~ spark_bucketing.describe_spec(new) ~ ", and on_bucket_change is 'fail'",
        "set on_bucket_change='rebuild' to rewrite every partition with the new spec, or on_bucket_change='evolve' to write new partitions with it and keep the old ones as they are (or restore the old spec)") -%}
  {%- endif -%}
  {%- if old.buckets != new.buckets and incr.on_bucket_change == 'evolve' -%}
    {%- if not spark_bucketing.power_of_two_multiple(old.buckets, new.buckets) -%}
      {%- do exceptions.warn("spark_bucketing: model '" ~ model.unique_id ~ "': bucket count " ~ old.buckets ~ " -> " ~ new.buckets
          ~ " is not a power-of-two multiple; Trino cannot read partitions with these two counts together as bucketed") -%}
    {%- endif -%}
  {%- endif -%}
  {{ return(incr.on_bucket_change == 'rebuild') }}
{% endmacro %}

{% macro power_of_two_multiple(a, b) %}
  {%- set hi = [a, b] | max -%}
  {%- set lo = [a, b] | min -%}
  {%- if hi % lo != 0 -%}{{ return(false) }}{%- endif -%}
  {%- set ns = namespace(r=(hi // lo)) -%}
  {%- for _ in range(40) if ns.r > 1 and ns.r % 2 == 0 -%}{%- set ns.r = ns.r // 2 -%}{%- endfor -%}
  {{ return(ns.r == 1) }}
{% endmacro %}

{% macro is_incremental() %}
  {#- dbt's is_incremental() is true only for materialized='incremental';
      this one answers for bucketed_incremental models. -#}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {{ return(relation is not none and relation.type == 'table'
      and model.config.materialized == 'bucketed_incremental' and not should_full_refresh()) }}
{% endmacro %}
