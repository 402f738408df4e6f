{#- Partition-level bucket metadata, format version 1: its one writer
    (metadata_properties) and its one SQL reader (read_metadata). The format
    is documented in docs/metadata.md; its Python reader is
    spark_bucketing.metadata, its Scala reader PartitionRecords.scala, both
    tested against records these macros wrote. Stored as table properties
    (Spark SQL cannot set partition parameters on datasource tables), which
    any SQL client reads with SHOW TBLPROPERTIES; keys may not start with
    spark.sql. -#}

{% macro metadata_prefix() %}{{ return('spark_bucketing.') }}{% endmacro %}

{% macro commit_key() %}
  {#- The table property that numbers the commits to the table (each run's
      switch and records, under the commit lock): a run that finds it
      changed since it read the table plans its switch anew. -#}
  {{ return(spark_bucketing.metadata_prefix() ~ 'commit') }}
{% endmacro %}

{% macro replaced_key(folder) %}
  {#- The table property that keeps a replaced folder until its retention ends (replaced_folders_retention). -#}
  {{ return(spark_bucketing.metadata_prefix() ~ 'replaced.' ~ local_md5(folder)) }}
{% endmacro %}

{% macro adding_key(run_id) %}
  {#- The table property that holds, while a run's switch moves an append's
      files into partitions' folders, the switch's payload for those moves:
      a run that died in it is rolled forward by the next (finish_added_files). -#}
  {{ return(spark_bucketing.metadata_prefix() ~ 'adding.' ~ run_id) }}
{% endmacro %}

{% macro adding_entries(props) %}
  {#- {adding_key: payload} of the appends whose switch was moving files. -#}
  {{ return(dict(props.items() | selectattr('0', 'in', spark_bucketing.prefixed_keys(props, spark_bucketing.adding_key(''))))) }}
{% endmacro %}

{% macro restoring_key(run_id) %}
  {#- The table property that holds, from before a run's switch until its
      LOAD DATA statements ran, {path: values} of the partitions whose spec
      it restores: a run that died between the two is finished by the next
      (restore_dead_runs_bucket_specs). -#}
  {{ return(spark_bucketing.metadata_prefix() ~ 'restoring.' ~ run_id) }}
{% endmacro %}

{% macro restoring_entries(props) %}
  {#- {restoring_key: {path: values}} of the runs whose specs are being restored. -#}
  {%- set out = {} -%}
  {%- for key in spark_bucketing.prefixed_keys(props, spark_bucketing.restoring_key('')) -%}
    {%- do out.update({key: fromjson(props[key]) or {}}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro replaced_entries(props) %}
  {#- {property key: {'folder', 'replaced_at'}} of the replaced folders the table keeps. -#}
  {%- set keys = spark_bucketing.prefixed_keys(props, spark_bucketing.metadata_prefix() ~ 'replaced.') -%}
  {%- set items = props.items() | selectattr('0', 'in', set(keys)) | list -%}
  {{ return(dict(zip(items | map(attribute='0'), fromjson('[' ~ (items | map(attribute='1') | join(',')) ~ ']') or []))) }}
{% endmacro %}

{% macro partition_key(path) %}
  {#- The property key of a partition's record. The Hive metastore holds keys
      of up to 256 characters; a longer one, and one Spark would show
      redacted (a key holding "url": unredacted), is named by the MD5 of the
      path (the record itself carries the path). -#}
  {%- set key = spark_bucketing.metadata_prefix() ~ 'partition.' ~ path -%}
  {{ return(key if key | length <= 256 and 'url' not in key | lower else spark_bucketing.metadata_prefix() ~ 'partition.md5:' ~ local_md5(path)) }}
{% endmacro %}

{% macro stats_records(spec, stats, accounting=none, commit=none) %}
  {#- {path: record} of `stats` (from partition_stats) written with `spec`,
      with a merge's row accounting of each partition and the number of the
      commit that publishes it: the one place a record is made, whichever
      format stores it. -#}
  {%- set record = spark_bucketing.spec_record(spec) -%}
  {%- set out = {} -%}
  {%- for s in stats -%}
    {%- set entry = record.copy() -%}
    {%- do entry.update({'files': s.files, 'rows': s.rows, 'location': s.location, 'values': s['values'],
                         'path': s.path, 'written_at': run_started_at.isoformat()}) -%}
    {%- if commit is not none -%}{%- do entry.update({'commit': commit}) -%}{%- endif -%}
    {%- if spec.get('max_files_per_bucket', 1) > 1 -%}{%- do entry.update({'max_files_per_bucket': spec.max_files_per_bucket}) -%}{%- endif -%}
    {%- if accounting is not none -%}
      {%- do entry.update({'merge': accounting[spark_bucketing.values_key(s['values'], spec.partition_by)]}) -%}
    {%- endif -%}
    {%- do out.update({s.path: entry}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro added_record(spec, s, rec, commit) %}
  {#- The record `rec` of a partition (read under the commit lock) once the
      files of `s` (partition_stats) are added to it: the files and rows
      added, `appended` one more. -#}
  {%- set rec = rec.copy() -%}
  {%- do rec.update({'files': rec.files + s.files, 'rows': rec.rows + s.rows, 'appended': rec.get('appended', 0) + 1,
                     'written_at': run_started_at.isoformat(), 'commit': commit, 'max_files_per_bucket': spec.max_files_per_bucket}) -%}
  {{ return(rec) }}
{% endmacro %}

{% macro metadata_properties(spec, stats, accounting=none, commit=none) %}
  {#- Format 1: the properties that record `stats` written with `spec` (by commit number `commit`). -#}
  {%- set prefix = spark_bucketing.metadata_prefix() -%}
  {%- set props = {prefix ~ 'format_version': '1', prefix ~ 'spec': tojson(spark_bucketing.spec_record(spec))} -%}
  {%- if commit is not none -%}{%- do props.update({spark_bucketing.commit_key(): commit | string}) -%}{%- endif -%}
  {%- for path, entry in spark_bucketing.stats_records(spec, stats, accounting, commit).items() -%}
    {%- do props.update({spark_bucketing.partition_key(path) if spec.partition_by else (prefix ~ 'table'): tojson(entry)}) -%}
  {%- endfor -%}
  {{ return(props) }}
{% endmacro %}

{% macro accounting_text(a) %}
  {#- A merge record's counts as a sentence. -#}
  {{ return('before ' ~ a.rows_before ~ ' + inserted ' ~ a.inserted ~ ' + moved in ' ~ a.moved_in
      ~ ' - deleted ' ~ a.deleted ~ ' - moved out ' ~ a.moved_out ~ ' = ' ~ a.rows_after) }}
{% endmacro %}

{% macro table_properties(relation) %}
  {#- {key: value} of SHOW TBLPROPERTIES, built without a Jinja step per row
      (a table of 10,000 partitions holds 10,000 records). -#}
  {%- set result = run_query('show tblproperties ' ~ relation) -%}
  {{ return(dict(zip(result.columns[0].values(), result.columns[1].values()))) }}
{% endmacro %}

{% macro kind_properties(rows, kind) %}
  {#- {key: value} of the (kind, key, value) rows of `kind` among `rows`, as
      an extension statement returns a table's properties (or a query's
      columns, in order) beside other rows (mark_choosing, described_run);
      none where there are none. -#}
  {%- set props = rows | selectattr('0', 'equalto', kind) | list -%}
  {{ return(dict(zip(props | map(attribute='1'), props | map(attribute='2'))) if props else none) }}
{% endmacro %}

{% macro prefixed_keys(props, prefix) %}
  {#- The keys of `props` that start with `prefix`, found by one regular
      expression over all keys rather than a Jinja step per key (seconds on
      10,000 records). Keys hold no line breaks (Spark escapes control
      characters in partition paths); only keys of `props` are returned. -#}
  {%- set found = modules.re.findall('(?m)^' ~ modules.re.escape(prefix) ~ '.*$', props.keys() | join('\n')) -%}
  {{ return(found | select('in', props) | list) }}
{% endmacro %}

{% macro read_metadata(relation, props=none, records=true) %}
  {#- {'spec': record or none, 'partitions': {path: record}, 'keys': {path: property key},
       'table': record or none, 'version': format version or none,
       'commit': the number of the table's latest commit (commit_key; 0 for none),
       'replaced': replaced_entries, 'adding': adding_entries, 'restoring': restoring_entries,
       'summary': format 2's summary or none, 'moving': in format 1, whether
       a run that moved the table to format 2 failed after its switch}. The
      records are parsed in one fromjson and paired with their keys by zip:
      on 10,000 partitions a Jinja step per record costs most of a second.
      In format 2 (partition_records.sql) the records are read from the
      partitions (with the session extension) unless `records` is false: a
      run reads only the summary. -#}
  {%- set props = props if props is not none else spark_bucketing.table_properties(relation) -%}
  {%- set prefix = spark_bucketing.metadata_prefix() -%}
  {%- set pending = {'commit': props.get(spark_bucketing.commit_key(), '0') | int, 'replaced': spark_bucketing.replaced_entries(props),
                     'adding': spark_bucketing.adding_entries(props), 'restoring': spark_bucketing.restoring_entries(props)} -%}
  {%- if props.get(prefix ~ 'format_version') == '2' -%}
    {%- set summary = fromjson(props.get(spark_bucketing.summary_key(), 'null')) -%}
    {#- 'keys': format 1's record properties a move to format 2 left, for the next run to unset. -#}
    {%- set leftover = spark_bucketing.prefixed_keys(props, prefix ~ 'partition.') -%}
    {%- set out = dict(pending, spec=fromjson(props.get(prefix ~ 'spec', 'null')), partitions={}, keys=dict(zip(leftover, leftover)), table=none, version='2',
                       summary=summary if summary is mapping and 'specs' in summary else none, moving=false) -%}
    {%- if records -%}
      {%- do spark_bucketing.require_records_extension(relation, spark_bucketing.extension_loaded(), "cannot be read") -%}
      {%- do out.update({'partitions': dict(spark_bucketing.all_partition_records(relation).items() | rejectattr('1', 'none'))}) -%}
    {%- endif -%}
    {{ return(out) }}
  {%- endif -%}
  {%- set part_prefix = prefix ~ 'partition.' -%}
  {%- set keys = spark_bucketing.prefixed_keys(props, part_prefix) -%}
  {%- set values = props.items() | selectattr('0', 'in', set(keys)) | map(attribute='1') | list -%}
  {%- set records = fromjson('[' ~ values | join(',') ~ ']') -%}
  {%- if records is none -%}
    {#- A value that is not JSON: found one by one, so the error names it. -#}
    {%- for key, value in zip(keys, values) if fromjson(value) is none -%}
      {%- if 'redacted' in value -%}
        {%- do exceptions.raise_compiler_error("spark_bucketing: Spark shows the table property " ~ key ~ " of " ~ relation ~ " as " ~ value
            ~ ": its key or value matches the session's spark.sql.redaction.options.regex, which the package's records avoid only for the default, (?i)url."
            ~ " Fix: keep that setting's default on the sessions that run dbt, or make it match none of the keys and values spark_bucketing.* holds") -%}
      {%- endif -%}
      {%- do exceptions.raise_compiler_error("spark_bucketing: the table property " ~ key ~ " of " ~ relation
          ~ " is not a JSON record: " ~ value[:200] ~ ". Unset it (alter table " ~ relation ~ " unset tblproperties ('" ~ key
          ~ "')): the table is then declared unbucketed until a run rewrites that partition and records it anew.") -%}
    {%- endfor -%}
  {%- endif -%}
  {#- (map's default=none would mean no default: a missing path is '' here, never a partition's.) -#}
  {%- set paths = records | map(attribute='path', default='') | list -%}
  {%- if '' in paths -%}
    {#- Records written before they carried their path: named by their key. -#}
    {%- set paths = [] -%}
    {%- for key, rec in zip(keys, records) -%}{%- do paths.append(rec.get('path', key[part_prefix | length:])) -%}{%- endfor -%}
  {%- endif -%}
  {%- set out = dict(pending, spec=none, partitions=dict(zip(paths, records)), keys=dict(zip(paths, keys)), table=none,
                     version=props.get(prefix ~ 'format_version'), summary=none, moving=spark_bucketing.summary_key() in props) -%}
  {%- if prefix ~ 'spec' in props -%}{%- do out.update({'spec': fromjson(props[prefix ~ 'spec'])}) -%}{%- endif -%}
  {%- if prefix ~ 'table' in props -%}{%- do out.update({'table': fromjson(props[prefix ~ 'table'])}) -%}{%- endif -%}
  {{ return(out) }}
{% endmacro %}

{% macro get_bucket_metadata(relation) %}
  {#- For SQL authors and run-operation: one dict per partition (or one for an
      unpartitioned table) with its recorded spec, files and rows. -#}
  {%- set meta = spark_bucketing.read_metadata(relation) -%}
  {%- set out = [] -%}
  {%- if meta.table -%}{%- do out.append(dict(meta.table, partition='')) -%}{%- endif -%}
  {%- for path, rec in meta.partitions | dictsort -%}{%- do out.append(dict(rec, partition=path)) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro bucket_metadata(relation) -%}
  {#- A query over the recorded metadata, e.g.
      select * from ({{ spark_bucketing.bucket_metadata(ref('orders')) }}) where buckets <> 64 -#}
  {%- set rows = spark_bucketing.get_bucket_metadata(relation) if execute else [] -%}
  {%- if rows | length == 0 -%}
    select cast(null as string) as `partition`, cast(null as string) as hash, cast(null as string) as clustered_by,
           cast(null as int) as buckets, cast(null as string) as sorted_by, cast(null as bigint) as files,
           cast(null as bigint) as row_count, cast(null as string) as location, cast(null as string) as written_at
    where false
  {%- else -%}
    select * from values
    {%- for r in rows %}
      ({{ spark_bucketing.sql_string(r.partition) }}, {{ spark_bucketing.sql_string(r.hash) }},
       {{ spark_bucketing.sql_string(r.clustered_by | join(',')) }}, {{ r.buckets | int }},
       {{ spark_bucketing.sql_string(r.sorted_by | join(',')) }}, {{ r.files | int }}, {{ r.rows | int }},
       {{ spark_bucketing.sql_string(r.location) }}, {{ spark_bucketing.sql_string(r.written_at) }}){{ ',' if not loop.last }}
    {%- endfor %}
    as bucket_metadata(`partition`, hash, clustered_by, buckets, sorted_by, files, row_count, location, written_at)
  {%- endif -%}
{%- endmacro %}

{% macro show_bucket_metadata(relation_name) %}
  {#- dbt run-operation spark_bucketing.show_bucket_metadata --args '{relation_name: schema.table}' -#}
  {%- set parts = relation_name.split('.') -%}
  {%- set relation = api.Relation.create(schema=parts[0], identifier=parts[1], type='table') -%}
  {%- for r in spark_bucketing.get_bucket_metadata(relation) -%}
    {%- do log((r.partition or '(table)') ~ ': ' ~ spark_bucketing.describe_spec(r) ~ '; ' ~ r.files ~ ' files, ' ~ r.rows ~ ' rows', info=true) -%}
  {%- endfor -%}
{% endmacro %}
