{#- Changing the bucket spec a table declares. The catalog must never declare
    a spec that any partition's files break (see docs/incremental.md,
    "Safety"): an evolving table is declared unbucketed while its partitions
    disagree, and bucketed again once they agree. -#}

{% macro declared_partitions(target, partition_by, stats) %}
  {#- [(values, location)] of every partition the catalog lists: at the
      folder its files are in (`stats`: the table's partition_stats), or,
      for a partition without files, where the catalog has it. -#}
  {%- set catalog = spark_bucketing.catalog_partitions(target) -%}
  {%- set entries = [] -%}
  {%- set found = [] -%}
  {%- for s in stats -%}
    {%- do entries.append((s['values'], s.location)) -%}{%- do found.append(s['values']) -%}
  {%- endfor -%}
  {%- for path, values in catalog.items() if not spark_bucketing.values_in(values, found, partition_by) -%}
    {%- do entries.append((values, spark_bucketing.partition_location(target, values))) -%}
  {%- endfor -%}
  {{ return(entries) }}
{% endmacro %}

{% macro redeclare(rels, target, record, spec, stats=none, entries=none, columns=none) %}
  {#- Re-declares the table's bucket spec (`record`, or none for unbucketed)
      by a new catalog entry over the same files: Spark cannot ALTER a bucket
      spec (nor drop or retype a column: `columns`, the new entry's columns,
      the table's by default). The new entry gets every partition at its
      current folder and the metadata properties, then the entries swap by
      renames. `stats`: the table's partition_stats, when the caller has
      them; `entries`: the partitions as declared_partitions gives them,
      when the caller has them. -#}
  {%- set info = spark_bucketing.table_info(target) -%}
  {%- set decl = spark_bucketing.with_record(spec, record) -%}
  {%- do decl.update({'partition_by': info.partition_by}) -%}
  {%- do adapter.drop_relation(rels.respec) -%}
  {%- call statement('spark_bucketing_redeclare') -%}
    {{ spark_bucketing.create_bucketed_table_sql(rels.respec, decl, columns or info.columns, info.location) }}
  {%- endcall -%}
  {%- if entries is none -%}
    {%- set stats = stats if stats is not none else spark_bucketing.partition_stats(target, info.partition_by) -%}
    {%- set entries = spark_bucketing.declared_partitions(target, info.partition_by, stats) -%}
  {%- endif -%}
  {%- for sql in spark_bucketing.add_partition_statements(rels.respec, entries) -%}
    {%- call statement('spark_bucketing_add_partitions') -%}{{ sql }}{%- endcall -%}
  {%- endfor -%}
  {%- set props = spark_bucketing.table_properties(target) -%}
  {%- if props.get(spark_bucketing.metadata_prefix() ~ 'format_version') == '2' -%}
    {#- Format 2: the records go with their partitions into the new entry. -#}
    {%- set moves = spark_bucketing.record_only_moves(dict(spark_bucketing.all_partition_records(target).items() | rejectattr('1', 'none'))) -%}
    {%- if moves -%}{%- do run_query(spark_bucketing.switch_with_records_sql(rels.respec, moves, {})) -%}{%- endif -%}
  {%- endif -%}
  {%- set keys = set(spark_bucketing.prefixed_keys(props, spark_bucketing.metadata_prefix())) -%}
  {%- do spark_bucketing.set_properties(rels.respec, dict(props.items() | selectattr('0', 'in', keys))) -%}
  {%- do spark_bucketing.checkpoint('redeclare_before_swap') -%}
  {%- do spark_bucketing.swap_in(rels.respec, target, rels, 'redeclare_') -%}
  {%- do log("spark_bucketing: " ~ rels.target ~ " now declares " ~ spark_bucketing.describe_spec(record), info=true) -%}
{% endmacro %}

{% macro verified_spec(target, stats, record, published) %}
  {#- `record` when every partition this run did not write still holds the
      folder, files and rows its record says (so its files follow the spec
      the record names), else none. Someone may have written files into a
      partition behind the package's back: its record is then stale, and
      declaring the spec could promise a layout those files break. The run's
      own partitions were verified before the switch (verify_partitions). -#}
  {#- Format 2 decided `record` from its summary, not from the records: each record's spec is checked too. -#}
  {%- set summary = published.records is none -%}
  {%- set records = spark_bucketing.all_partition_records(target) if summary else published.records -%}
  {%- set key = spark_bucketing.spec_key(record) -%}
  {%- for s in stats if s.path not in published.written -%}
    {%- set rec = records.get(s.path) -%}
    {%- if rec is none or not spark_bucketing.same_location(rec.location, s.location) or rec.files != s.files or rec.rows != s.rows
        or summary and spark_bucketing.spec_key(rec) != key -%}
      {%- do log("spark_bucketing: partition " ~ s.path ~ " of " ~ target ~ " holds " ~ s.rows ~ " rows in " ~ s.files
          ~ " files, not what its record says; the table stays declared unbucketed until the partition is rewritten", info=true) -%}
      {{ return(none) }}
    {%- endif -%}
  {%- endfor -%}
  {{ return(record) }}
{% endmacro %}
