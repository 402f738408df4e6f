{#- Generic test: a table's recorded bucket metadata, its files and the spec
    its catalog declares agree. One result row per problem. -#}

{% test bucket_metadata(model) %}
  {%- if not execute -%}
    select cast(null as string) as object, cast(null as string) as problem where false
  {%- else -%}
    {%- set problems = spark_bucketing.metadata_problems(model) -%}
    {%- if problems | length > 0 -%}
      {%- do log("bucket_metadata: " ~ model ~ " has " ~ (problems | length) ~ " problems:\n  "
          ~ (problems[:50] | map(attribute='problem') | join('\n  ')), info=true) -%}
    {%- endif -%}
    {{ spark_bucketing.rows_as_values(problems, ['object', 'problem']) }}
  {%- endif -%}
{% endtest %}

{% macro metadata_problems(relation) %}
  {%- set info = spark_bucketing.table_info(relation) -%}
  {%- set meta = spark_bucketing.read_metadata(relation) -%}
  {%- set problems = [] -%}
  {%- if meta.spec is none -%}
    {%- do problems.append({'object': relation | string, 'problem': 'no spark_bucketing metadata is recorded for this table'}) -%}
    {{ return(problems) }}
  {%- endif -%}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- set spec = {'partition_by': info.partition_by} -%}
  {%- set actual = spark_bucketing.table_stats(relation, spec) -%}
  {%- set records = meta.partitions if info.partition_by else ({'': meta.table} if meta.table else {}) -%}
  {%- set seen = [] -%}
  {%- for s in actual -%}
    {%- set rec = records.get(s.path) -%}
    {%- set name = s.path or (relation | string) -%}
    {%- do seen.append(s.path) -%}
    {%- if rec is none -%}
      {%- do problems.append({'object': name, 'problem': 'partition has no recorded bucket spec'}) -%}
    {%- else -%}
      {%- if not spark_bucketing.same_location(rec.location, s.location) -%}
        {%- do problems.append({'object': name, 'problem': 'recorded location ' ~ rec.location ~ ' but files are in ' ~ s.location}) -%}
      {%- endif -%}
      {%- if rec.files != s.files or rec.rows != s.rows -%}
        {%- do problems.append({'object': name, 'problem': 'recorded ' ~ rec.files ~ ' files and ' ~ rec.rows ~ ' rows, found ' ~ s.files ~ ' files and ' ~ s.rows ~ ' rows'}) -%}
      {%- endif -%}
      {%- if declared is not none and not spark_bucketing.same_spec(declared, rec) -%}
        {%- do problems.append({'object': name, 'problem': 'catalog declares ' ~ spark_bucketing.describe_spec(declared) ~ ' but the partition was written with ' ~ spark_bucketing.describe_spec(rec)}) -%}
      {%- endif -%}
    {%- endif -%}
  {%- endfor -%}
  {%- for path in records if path not in seen and records[path].rows > 0 -%}
    {%- do problems.append({'object': path or (relation | string), 'problem': 'metadata records ' ~ records[path].rows ~ ' rows but no files hold any'}) -%}
  {%- endfor -%}
  {#- Bucket ids in file names and row placement, against each partition's recorded spec. -#}
  {%- for row in spark_bucketing.layout_violations(relation, info, meta) -%}
    {%- do problems.append({'object': row['file_path'], 'problem': row['problem']}) -%}
  {%- endfor -%}
  {{ return(problems) }}
{% endmacro %}
