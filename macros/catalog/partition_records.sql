{#- Partition-level bucket metadata, format version 2
    (bucket_records='partition_parameters'; docs/metadata.md): each
    partition's record in its own partition parameters, where only the
    session extension can write it (its switch, in the metastore call that
    moves, adds or drops the partition) and read it (its records function).
    The table's properties keep the format version, the spec of the latest
    write and a summary of the partitions' specs: how many listed partitions
    hold each spec, and a digest of the listed paths. A run decides the
    table's declared spec from the summary, so it reads no record but those
    of the partitions it replaces (which its switch returns); the table's
    entry stays the same size however many partitions it has. A summary
    that is missing, left pending by a failed run, or whose digest no
    longer matches the catalog's list is rebuilt from every record. -#}

{% macro records_function() %}
  {#- The extension's table function of every partition's record; tied to
      PartitionRecordsFunction in scala/Contracts.scala. -#}
  {{ return('spark_bucketing_records') }}
{% endmacro %}

{% macro summary_key() %}
  {#- The table property of the summary; tied to SUMMARY_KEY in spark_bucketing/contracts.py. -#}
  {{ return('spark_bucketing.partitions') }}
{% endmacro %}

{% macro records_format(spec) %}
  {#- The format a run writes: 2 for partitioned tables that keep their
      records in partition parameters; an unpartitioned table's one record
      stays in its properties. -#}
  {{ return('2' if spec.bucket_records == 'partition_parameters' and spec.partition_by else '1') }}
{% endmacro %}

{% macro require_records_extension(relation, extension, why) %}
  {%- if not extension -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: " ~ relation ~ " " ~ why ~ ": its partitions' records are kept in"
        ~ " partition parameters (bucket_records='partition_parameters'), which only the session extension reads and writes."
        ~ " Load it (docs/extension.md: spark.sql.extensions and the jar), or rebuild the table with"
        ~ " bucket_records='table_properties' and --full-refresh.") -%}
  {%- endif -%}
{% endmacro %}

{% macro parsed_records(relation, paths, values) %}
  {#- {path: record or none} of the records function's rows, parsed in one fromjson. -#}
  {%- set recorded = zip(paths, values) | rejectattr('1', 'none') | list -%}
  {%- set records = fromjson('[' ~ (recorded | map(attribute='1') | join(',')) ~ ']') -%}
  {%- if records is none -%}
    {%- for path, value in recorded if fromjson(value) is none -%}
      {%- do exceptions.raise_compiler_error("spark_bucketing: the record of partition " ~ path ~ " of " ~ relation
          ~ " is not JSON: " ~ value[:200] ~ ". Rebuild the table (dbt run --full-refresh) to record every partition anew.") -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set out = dict(zip(paths, [none] * (paths | length))) -%}
  {%- do out.update(zip(recorded | map(attribute='0'), records)) -%}
  {{ return(out) }}
{% endmacro %}

{% macro all_partition_records(relation) %}
  {#- {path: record or none} of every partition the catalog lists: one
      metastore listing of every partition with its parameters (a table's
      test, its readers, the rebuild of a summary; never a run's common
      path). -#}
  {%- set result = run_query('select path, record from ' ~ spark_bucketing.records_function() ~ '(' ~ spark_bucketing.sql_string(relation | string) ~ ')') -%}
  {{ return(spark_bucketing.parsed_records(relation, result.columns[0].values() | list, result.columns[1].values() | list)) }}
{% endmacro %}

{% macro partition_records_of(relation, partitions) %}
  {#- {path: {'record': record or none, 'location': the partition's folder}}
      of the listed partitions among `partitions` ([{column: value}]): one
      metastore call for those partitions alone (the records function's
      second argument), however many the table has. -#}
  {%- if not partitions -%}{{ return({}) }}{%- endif -%}
  {%- set result = run_query('select path, record, location from ' ~ spark_bucketing.records_function() ~ '('
      ~ spark_bucketing.sql_string(relation | string) ~ ', ' ~ spark_bucketing.sql_string(tojson(partitions)) ~ ')') -%}
  {{ return(spark_bucketing.located_records(relation, result.columns[0].values() | list,
      result.columns[1].values() | list, result.columns[2].values() | list)) }}
{% endmacro %}

{% macro checked_partition_records(relation, rows) %}
  {#- partition_records_of's answer from the rows of a write's check that
      carry the records of `relation` (write_folder's `records_of`): the
      partitions the catalog lists among the rows' paths. -#}
  {%- set listed = {} -%}
  {%- for row in rows if row['__sb_location'] is not none -%}
    {%- do listed.update({row['__sb_path']: (row['__sb_record'], row['__sb_location'])}) -%}
  {%- endfor -%}
  {{ return(spark_bucketing.located_records(relation, listed.keys() | list,
      listed.values() | map(attribute='0') | list, listed.values() | map(attribute='1') | list)) }}
{% endmacro %}

{% macro located_records(relation, paths, values, locations) %}
  {#- {path: {'record': record or none, 'location': the partition's folder}}
      of the same partitions' paths, records' values and folders. -#}
  {%- set records = spark_bucketing.parsed_records(relation, paths, values) -%}
  {%- set out = {} -%}
  {%- for path, location in zip(paths, locations) -%}
    {%- do out.update({path: {'record': records[path], 'location': location}}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro listed_digest(paths) %}
  {#- A digest of a set of partition paths: one MD5 of them sorted. -#}
  {{ return(local_md5(paths | sort(case_sensitive=true) | join('\n'))) }}
{% endmacro %}

{% macro spec_counts(records) %}
  {#- {spec key: {'count', 'spec'}} of `records` (path: record or none; a
      partition without a record counts under the key 'none'). -#}
  {%- set out = {} -%}
  {%- for rec in records.values() -%}
    {%- set key = spark_bucketing.spec_key(rec) or 'none' -%}
    {%- if key in out -%}{%- do out[key].update({'count': out[key].count + 1}) -%}
    {%- else -%}{%- do out.update({key: {'count': 1, 'spec': none if rec is none else spark_bucketing.spec_record_of(rec)}}) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro summary(counts, listed) %}
  {#- The summary property's value: the spec counts and the listed paths' digest. -#}
  {{ return(tojson({'specs': counts, 'listed': listed | length, 'listed_md5': spark_bucketing.listed_digest(listed)})) }}
{% endmacro %}

{% macro current_counts(relation, meta, listed, moved=none) %}
  {#- The spec counts of the table's listed partitions (`listed`, a set of
      paths) before this run changes them: from the summary when it holds
      and still describes the catalog's list, else rebuilt from every
      record (format 2) or from `moved` (format 1, whose records this run
      moves: records_to_move). -#}
  {%- set s = meta.summary -%}
  {%- if meta.version == '2' and s is not none and s.listed == listed | length and s.listed_md5 == spark_bucketing.listed_digest(listed) -%}
    {{ return(s.specs) }}
  {%- endif -%}
  {%- set records = spark_bucketing.all_partition_records(relation) if meta.version == '2' else moved -%}
  {{ return(spark_bucketing.spec_counts(spark_bucketing.listed_records(records, listed))) }}
{% endmacro %}

{% macro counted(counts, removed, added) %}
  {#- `counts` less the `removed` records (none: a partition without one) plus the `added` ones. -#}
  {%- set out = {} -%}
  {%- for key, entry in counts.items() -%}{%- do out.update({key: entry.copy()}) -%}{%- endfor -%}
  {%- for rec in removed -%}
    {%- set key = spark_bucketing.spec_key(rec) or 'none' -%}
    {%- if key in out -%}{%- do out[key].update({'count': out[key].count - 1}) -%}{%- endif -%}
  {%- endfor -%}
  {%- for key, entry in spark_bucketing.spec_counts(dict(zip(range(added | length), added))).items() -%}
    {%- if key in out -%}{%- do out[key].update({'count': out[key].count + entry.count}) -%}
    {%- else -%}{%- do out.update({key: entry}) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(dict(out.items() | selectattr('1.count', 'gt', 0))) }}
{% endmacro %}

{% macro common_spec(counts) %}
  {#- The spec every partition of `counts` holds, or none. -#}
  {%- set keys = counts.keys() | list -%}
  {{ return(counts[keys[0]].spec if keys | length == 1 and keys[0] != 'none' else none) }}
{% endmacro %}

{% macro records_to_move(relation, meta) %}
  {#- A format-1 table's records ({path: record}), for a run that moves it
      to format 2. A move that failed after its switch (the summary still
      pending) left the partitions it switched with their new records in
      their parameters, and the table's properties with their old ones: the
      parameters' records stand. -#}
  {%- if not meta.moving -%}{{ return(meta.partitions) }}{%- endif -%}
  {%- set out = dict(meta.partitions) -%}
  {%- do out.update(spark_bucketing.all_partition_records(relation).items() | rejectattr('1', 'none')) -%}
  {{ return(out) }}
{% endmacro %}

{% macro listed_records(records, listed) %}
  {#- {path: record or none} of every path in `listed`, from `records` ({path: record}). -#}
  {%- set out = dict(zip(listed, [none] * (listed | length))) -%}
  {%- do out.update(records.items() | selectattr('0', 'in', listed)) -%}
  {{ return(out) }}
{% endmacro %}
