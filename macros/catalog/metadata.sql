{#- Partition-level bucket metadata, format version 1: its one writer
    (metadata_properties) and its one SQL reader (read_metadata). The format
    is documented in docs/metadata.md; its Python reader is
    spark_bucketing.metadata, its Scala reader PartitionRecords.scala, both
    tested against records these macros wrote. Stored as table properties
    (Spark SQL cannot set partition parameters on datasource tables), which
    any SQL client reads with SHOW TBLPROPERTIES; keys may not start with
    spark.sql. -#}

{% macro metadata_prefix() %}{{ return('spark_bucketing.') }}{% endmacro %}

{% macro partition_key(path) %}
  {#- The property key of a partition's record. The Hive metastore holds keys
      of up to 256 characters; a longer one is named by the MD5 of the path
      (the record itself carries the path). -#}
  {%- set key = spark_bucketing.metadata_prefix() ~ 'partition.' ~ path -%}
  {{ return(key if key | length <= 256 else spark_bucketing.metadata_prefix() ~ 'partition.md5:' ~ local_md5(path)) }}
{% endmacro %}

{% macro metadata_properties(spec, stats, accounting=none) %}
  {#- The properties that record `stats` (from partition_stats) written with
      `spec`, and a merge's row accounting of each partition. -#}
  {%- set prefix = spark_bucketing.metadata_prefix() -%}
  {%- set record = spark_bucketing.spec_record(spec) -%}
  {%- set props = {prefix ~ 'format_version': '1', prefix ~ 'spec': tojson(record)} -%}
  {%- for s in stats -%}
    {%- set entry = record.copy() -%}
    {%- do entry.update({'files': s.files, 'rows': s.rows, 'location': s.location, 'values': s['values'],
                         'path': s.path, 'written_at': run_started_at.isoformat()}) -%}
    {%- if accounting is not none -%}
      {%- do entry.update({'merge': accounting[spark_bucketing.values_key(s['values'], spec.partition_by)]}) -%}
    {%- endif -%}
    {%- do props.update({spark_bucketing.partition_key(s.path) if spec.partition_by else (prefix ~ 'table'): tojson(entry)}) -%}
  {%- endfor -%}
  {{ return(props) }}
{% endmacro %}

{% macro accounting_text(a) %}
  {#- A merge record's counts as a sentence. -#}
  {{ return('before ' ~ a.rows_before ~ ' + inserted ' ~ a.inserted ~ ' + moved in ' ~ a.moved_in
      ~ ' - deleted ' ~ a.deleted ~ ' - moved out ' ~ a.moved_out ~ ' = ' ~ a.rows_after) }}
{% endmacro %}

{% macro table_properties(relation) %}
  {%- set props = {} -%}
  {%- for row in run_query('show tblproperties ' ~ relation) -%}{%- do props.update({row[0]: row[1]}) -%}{%- endfor -%}
  {{ return(props) }}
{% endmacro %}

{% macro read_metadata(relation, props=none) %}
  {#- {'spec': record or none, 'partitions': {path: record}, 'keys': {path: property key},
       'table': record or none, 'version': format version or none} -#}
  {%- set props = props if props is not none else spark_bucketing.table_properties(relation) -%}
  {%- set prefix = spark_bucketing.metadata_prefix() -%}
  {%- set out = {'spec': none, 'partitions': {}, 'keys': {}, 'table': none, 'version': props.get(prefix ~ 'format_version')} -%}
  {%- for key, value in props.items() if key.startswith(prefix) -%}
    {%- if key == prefix ~ 'spec' -%}{%- do out.update({'spec': fromjson(value)}) -%}
    {%- elif key == prefix ~ 'table' -%}{%- do out.update({'table': fromjson(value)}) -%}
    {%- elif key.startswith(prefix ~ 'partition.') -%}
      {%- set rec = fromjson(value) -%}
      {%- set path = rec.get('path', key[(prefix ~ 'partition.') | length:]) -%}
      {%- do out.partitions.update({path: rec}) -%}
      {%- do out['keys'].update({path: key}) -%}
    {%- endif -%}
  {%- endfor -%}
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
