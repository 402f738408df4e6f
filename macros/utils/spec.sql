{#- The bucket spec record, the one shape every part of the package compares:
    {hash, clustered_by, buckets, sorted_by}, as the metadata stores it. A
    model's spec and a table's catalog description both carry the hash
    family as `bucket_hash` (the config's name); spec_record is the one
    place that turns either into a record, with_record the one way back. -#}

{% macro spec_record(spec) %}
  {%- set rec = {'hash': spec.bucket_hash, 'clustered_by': spec.clustered_by, 'buckets': spec.buckets, 'sorted_by': spec.sorted_by} -%}
  {#- Hive's bucketing version is recorded where it is 2 only: a record without one is v1, as every record before v2 was. -#}
  {%- if spec.get('bucketing_version', 1) == 2 -%}{%- do rec.update({'bucketing_version': 2}) -%}{%- endif -%}
  {{ return(rec) }}
{% endmacro %}

{% macro bucketing_version(rec) %}
  {#- Hive's bucketing version of a record (1 unless recorded). -#}
  {{ return(rec.get('bucketing_version', 1)) }}
{% endmacro %}

{% macro declared_spec(info) %}
  {#- The record of the spec a table's catalog entry declares (table_info), or none. -#}
  {{ return(spark_bucketing.spec_record(info) if info.buckets else none) }}
{% endmacro %}

{% macro with_record(spec, record) %}
  {#- `spec` declaring `record` (none: unbucketed). -#}
  {%- set out = spec.copy() -%}
  {%- do out.update({'buckets': none}) -%}
  {%- if record -%}
    {%- do out.update({'bucket_hash': record.hash, 'bucketing_version': spark_bucketing.bucketing_version(record),
                       'clustered_by': record.clustered_by, 'buckets': record.buckets, 'sorted_by': record.sorted_by}) -%}
  {%- endif -%}
  {{ return(out) }}
{% endmacro %}

{% macro spec_key(rec) %}
  {#- A spec (or a record holding one) as a string equal for equal specs,
      none for none. Column names compare case-insensitively, as Spark
      resolves them. -#}
  {%- if rec is none -%}{{ return(none) }}{%- endif -%}
  {{ return(tojson({'hash': rec.hash, 'version': spark_bucketing.bucketing_version(rec), 'buckets': rec.buckets, 'clustered_by': rec.clustered_by | map('lower') | list,
                    'sorted_by': rec.sorted_by | map('lower') | list})) }}
{% endmacro %}

{% macro same_spec(a, b) %}
  {{ return(spark_bucketing.spec_key(a) == spark_bucketing.spec_key(b)) }}
{% endmacro %}

{% macro spec_record_of(rec) %}
  {#- The spec fields of a partition's record. -#}
  {{ return(spark_bucketing.spec_record({'bucket_hash': rec.hash, 'bucketing_version': spark_bucketing.bucketing_version(rec),
      'clustered_by': rec.clustered_by, 'buckets': rec.buckets, 'sorted_by': rec.sorted_by})) }}
{% endmacro %}

{% macro describe_spec(s) %}
  {%- if s is none -%}{{ return('unbucketed') }}{%- endif -%}
  {{ return(s.buckets ~ ' buckets on (' ~ (s.clustered_by | join(', ')) ~ '), ' ~ s.hash ~ (' v2' if spark_bucketing.bucketing_version(s) == 2 else '') ~ ' hash'
      ~ (', sorted by (' ~ (s.sorted_by | join(', ')) ~ ')' if s.sorted_by else '')) }}
{% endmacro %}

{% macro power_of_two_multiple(a, b) %}
  {%- set hi = [a, b] | max -%}
  {%- set lo = [a, b] | min -%}
  {%- if hi % lo != 0 -%}{{ return(false) }}{%- endif -%}
  {%- set ns = namespace(r=(hi // lo)) -%}
  {%- for _ in range(40) if ns.r > 1 and ns.r % 2 == 0 -%}{%- set ns.r = ns.r // 2 -%}{%- endfor -%}
  {{ return(ns.r == 1) }}
{% endmacro %}

{% macro is_bucketed_incremental(node_config) %}
  {#- Whether a model (its config) is built by bucketed_incremental's run. -#}
  {{ return(node_config.materialized == 'bucketed_incremental'
      or node_config.materialized == 'incremental' and node_config.get('buckets') is not none) }}
{% endmacro %}
