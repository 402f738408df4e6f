{#- Generic test: a table's recorded bucket metadata, its files and the spec
    its catalog declares agree. One result row per problem. -#}

{% test bucket_metadata(model) %}
  {%- if not execute -%}
    select cast(null as string) as object, cast(null as string) as problem where false
  {%- else -%}
    {%- set relation = spark_bucketing.tested_relation(model) -%}
    {%- if not spark_bucketing.tested_table_exists(relation) -%}
      {{ return(spark_bucketing.not_built_yet(relation, 'bucket_metadata', ['object', 'problem'])) }}
    {%- endif -%}
    {%- set problems = spark_bucketing.metadata_problems(relation) -%}
    {%- if problems | length > 0 -%}
      {%- do log("bucket_metadata: " ~ relation ~ " has " ~ (problems | length) ~ " problems:\n  "
          ~ (problems[:50] | map(attribute='problem') | join('\n  ')) ~ "\n" ~ spark_bucketing.repair_hint(relation), info=true) -%}
    {%- endif -%}
    {{ spark_bucketing.rows_as_values(problems, ['object', 'problem']) }}
  {%- endif -%}
{% endtest %}

{% macro record_problems(rec, s, declared) %}
  {#- One partition's record against the files found in it (`s`, folder_stats) and the declared spec. -#}
  {%- set problems = [] -%}
  {%- if not spark_bucketing.same_location(rec.location, s.location) -%}
    {%- do problems.append('recorded location ' ~ rec.location ~ ' but files are in ' ~ s.location) -%}
  {%- endif -%}
  {%- if rec.files != s.files or rec.rows != s.rows -%}
    {%- do problems.append('recorded ' ~ rec.files ~ ' files and ' ~ rec.rows ~ ' rows, found ' ~ s.files ~ ' files and ' ~ s.rows ~ ' rows'
        ~ (' (' ~ (rec.rows - s.rows) ~ ' rows missing)' if s.rows < rec.rows else '')) -%}
  {%- endif -%}
  {%- set m = rec.get('merge') -%}
  {%- if m and (m.rows_before + m.inserted + m.moved_in - m.deleted - m.moved_out != m.rows_after or m.rows_after != rec.rows) -%}
    {%- do problems.append('merge row accounting does not add up: ' ~ spark_bucketing.accounting_text(m) ~ ', recorded rows ' ~ rec.rows) -%}
  {%- endif -%}
  {%- if declared is not none and not spark_bucketing.same_spec(declared, rec) -%}
    {%- do problems.append('catalog declares ' ~ spark_bucketing.describe_spec(declared) ~ ' but the partition was written with ' ~ spark_bucketing.describe_spec(rec)) -%}
  {%- endif -%}
  {{ return(problems) }}
{% endmacro %}

{% macro metadata_problems(relation) %}
  {%- set info = spark_bucketing.table_info(relation) -%}
  {%- set meta = spark_bucketing.read_metadata(relation) -%}
  {%- if meta.spec is none -%}
    {{ return([{'object': relation | string, 'problem': 'no spark_bucketing metadata is recorded for this table'}]) }}
  {%- endif -%}
  {%- set problems = [] -%}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- set found = {} -%}
  {%- for s in spark_bucketing.partition_stats(relation, info.partition_by) -%}{%- do found.update({s.path: s}) -%}{%- endfor -%}
  {%- set records = meta.partitions if info.partition_by else ({'': meta.table} if meta.table else {}) -%}
  {%- set listed = spark_bucketing.catalog_partitions(relation) if info.partition_by else {'': {}} -%}
  {%- for path, values in listed.items() -%}
    {%- set rec = records.get(path) -%}
    {%- set s = found.get(path) -%}
    {%- set name = path or (relation | string) -%}
    {%- if rec is none -%}
      {%- do problems.append({'object': name, 'problem': 'partition has no recorded bucket spec'}) -%}
    {%- elif s is none and rec.rows > 0 -%}
      {%- set location = spark_bucketing.partition_location(relation, values) if path else info.location -%}
      {%- do problems.append({'object': name, 'problem': 'metadata records ' ~ rec.rows ~ ' rows in ' ~ rec.files ~ ' files at ' ~ rec.location
          ~ ', but the catalog location ' ~ location ~ ' holds no rows (folder missing or empty)'}) -%}
    {%- elif s is not none -%}
      {%- for problem in spark_bucketing.record_problems(rec, s, declared) -%}{%- do problems.append({'object': name, 'problem': problem}) -%}{%- endfor -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for path, s in found.items() if path not in listed -%}
    {%- do problems.append({'object': s.location, 'problem': s.rows ~ ' rows are in a folder whose name matches no partition the catalog lists'}) -%}
  {%- endfor -%}
  {%- for path, rec in records.items() if path not in listed and rec.rows > 0 -%}
    {%- do problems.append({'object': path, 'problem': 'metadata records ' ~ rec.rows ~ ' rows but the catalog lists no such partition'}) -%}
  {%- endfor -%}
  {%- do problems.extend(spark_bucketing.summary_problems(relation, meta, records, listed)) -%}
  {#- Bucket ids in file names and row placement, against each partition's recorded spec. -#}
  {%- for row in spark_bucketing.layout_violations(relation, info, meta) -%}
    {%- do problems.append({'object': row['file_path'], 'problem': row['problem']}) -%}
  {%- endfor -%}
  {{ return(problems) }}
{% endmacro %}

{% macro summary_problems(relation, meta, records, listed) %}
  {#- Format 2: the summary a run decides the declared spec from, against
      the records, when it claims to describe the listed partitions. -#}
  {%- if meta.version != '2' or meta.summary is none or meta.summary.listed_md5 != spark_bucketing.listed_digest(listed.keys() | list) -%}
    {{ return([]) }}
  {%- endif -%}
  {%- set actual = spark_bucketing.spec_counts(spark_bucketing.listed_records(records, listed.keys() | list)) -%}
  {%- set claimed = meta.summary.specs -%}
  {%- set keys = ((actual.keys() | list) + (claimed.keys() | list)) | unique(case_sensitive=true) | list -%}
  {%- for key in keys if (actual.get(key) or {}).get('count', 0) != (claimed.get(key) or {}).get('count', 0) -%}
    {{ return([{'object': relation | string, 'problem': 'the summary (' ~ spark_bucketing.summary_key() ~ ') counts '
        ~ (claimed.get(key) or {}).get('count', 0) ~ ' partitions with ' ~ key ~ ' where the records hold '
        ~ (actual.get(key) or {}).get('count', 0) ~ ': unset it (alter table ' ~ relation ~ " unset tblproperties ('"
        ~ spark_bucketing.summary_key() ~ "')) and the next run rebuilds it from the records"}]) }}
  {%- endfor -%}
  {{ return([]) }}
{% endmacro %}
