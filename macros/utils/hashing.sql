{#- The bucket id of a row, per hash family (and Hive's bucketing version):
    the one SQL source of truth (its Python twin is
    spark_bucketing.hashing.bucket_id). -#}

{% macro hive_hash_types() %}
  {#- Types whose Hive v1 hash Spark computes exactly as Hive does; verified
      against Hive's ObjectInspectorUtils in tests/test_hashing.py, and tied
      to HIVE_HASH_TYPES in python_plugin/src/spark_bucketing/contracts.py by
      tests/test_contracts.py. -#}
  {{ return(['tinyint', 'smallint', 'int', 'bigint', 'string', 'boolean', 'date', 'float', 'double']) }}
{% endmacro %}

{% macro hive_hash_function(bucketing_version=1) %}
  {{ return(spark_bucketing.hive_hash_v2_function() if bucketing_version == 2 else spark_bucketing.hive_hash_v1_function()) }}
{% endmacro %}

{% macro hive_hash_v1_function() %}
  {#- Hive's own hash (GenericUDFHash): the session extension's function, and
      the temporary function register_hash_functions creates where the
      extension is not loaded; tied to HiveHashFunction in scala/Contracts.scala. -#}
  {{ return('spark_bucketing_hive_hash') }}
{% endmacro %}

{% macro hive_hash_v2_function() %}
  {#- Hive's bucketing v2 hash: the session extension's function; tied to HiveHashV2Function in scala/Contracts.scala. -#}
  {{ return('spark_bucketing_hive_hash_v2') }}
{% endmacro %}

{% macro hive_writer_hash_function() %}
  {#- The session extension's function: Spark's own Hive v1 hash, the one
      its writer places a Hive table's rows by; tied to
      HiveWriterHashFunction in scala/Contracts.scala. -#}
  {{ return('spark_bucketing_hive_writer_hash') }}
{% endmacro %}

{% macro register_hash_functions() %}
  {{ return(adapter.dispatch('register_hash_functions', 'spark_bucketing')()) }}
{% endmacro %}

{% macro default__register_hash_functions() %}
  {#- Hive's own hash UDF, session-scoped; needed before any bucket_id_expr
      of the hive family runs where the session extension (which adds it)
      is not loaded. Created only where the session has no function of
      that name (the extension's, or one an earlier model of the session
      created): Spark logs a WARN each time a temporary function replaces
      another. -#}
  {%- set listed = run_query("show user functions like '" ~ spark_bucketing.hive_hash_function() ~ "'") -%}
  {%- if listed | length == 0 -%}
    {%- call statement('spark_bucketing_register_hash', auto_begin=false) -%}
      create or replace temporary function {{ spark_bucketing.hive_hash_function() }}
      as 'org.apache.hadoop.hive.ql.udf.generic.GenericUDFHash'
    {%- endcall -%}
  {%- endif -%}
{% endmacro %}

{% macro bucket_id_expr(columns, buckets, bucket_hash, bucketing_version=1) %}
  {{ return(adapter.dispatch('bucket_id_expr', 'spark_bucketing')(columns, buckets, bucket_hash, bucketing_version)) }}
{% endmacro %}

{% macro default__bucket_id_expr(columns, buckets, bucket_hash, bucketing_version=1) -%}
  {#- `bucketing_version`: Hive's (1 or 2), for the hive family. -#}
  {%- set args = spark_bucketing.quoted(columns) | join(', ') -%}
  {%- if bucket_hash == 'hive' -%}
    {{ spark_bucketing.hive_bucket_sql(spark_bucketing.hive_hash_function(bucketing_version), columns, buckets) }}
  {%- elif bucket_hash == 'spark' -%}
    pmod(hash({{ args }}), {{ buckets }})
  {%- else -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: unknown bucket hash family '" ~ bucket_hash ~ "'") -%}
  {%- endif -%}
{%- endmacro %}

{% macro hive_bucket_sql(hash_function, columns, buckets) -%}
  {#- Hive's bucket of a row, `(h & Integer.MAX_VALUE) % buckets`, of the
      hash `hash_function` gives `columns`: Hive's own (bucket_id_expr) or
      the one Spark's writer places rows by (hive_writer_hash_function). -#}
  (({{ hash_function }}({{ spark_bucketing.quoted(columns) | join(', ') }}) & 2147483647) % {{ buckets }})
{%- endmacro %}
