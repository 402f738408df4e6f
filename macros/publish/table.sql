{#- Publishing a whole table: write it into the free one of the model's two
    folders under a side entry, verify it, record its metadata, then swap the
    entries by renames. A failure at any step before the swap leaves the
    previous table and its rows untouched. -#}

{% macro replace_table(rels, spec, columns, sql, old_relation, old_info, accounting=none) %}
  {#- `accounting`: a merge's row accounting (merge_row_accounting). -#}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- do spark_bucketing.require_records_extension(rels.target, spark_bucketing.extension_loaded(), "cannot be built") -%}
  {%- endif -%}
  {%- set owned = spark_bucketing.owned_locations(spec, rels.target) -%}
  {%- set location = spark_bucketing.free_location(owned, old_info) -%}
  {#- The free folder may hold an older build whose partitions the new one would not overwrite. -#}
  {%- do spark_bucketing.delete_locations([location], rels.scratch) -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.tmp, spec, columns, sql, location) -%}
  {%- set written = {'relation': rels.tmp, 'folder': none} -%}
  {%- set stats = spark_bucketing.verify_write(written, spec, location, rels).stats -%}
  {%- if accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(written, location, rels, spec.partition_by, stats, accounting) -%}
  {%- endif -%}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- do spark_bucketing.record_partitions(rels.tmp, spec, stats, accounting) -%}
  {%- else -%}
    {%- do spark_bucketing.set_properties(rels.tmp, spark_bucketing.metadata_properties(spec, stats, accounting)) -%}
  {%- endif -%}
  {%- do spark_bucketing.checkpoint('before_swap') -%}
  {%- do spark_bucketing.swap_in(rels.tmp, old_relation, rels) -%}
  {%- if old_relation is not none and old_info and old_info.type == 'external' and spark_bucketing.owns_location(old_info.location, owned) -%}
    {#- An external table's files outlive its DROP; the previous build's folder is ours to clear. -#}
    {%- do spark_bucketing.delete_locations([old_info.location], rels.scratch) -%}
  {%- endif -%}
{% endmacro %}
