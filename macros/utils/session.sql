{#- Reading the session's settings. The package never changes one: with
    `method: session` every dbt thread shares the session, so a change would
    be seen by the models running at the same time. -#}

{% macro get_conf(key) %}
  {%- set rows = run_query('set ' ~ key) -%}
  {{ return(rows[0][1] if rows | length > 0 else '<undefined>') }}
{% endmacro %}

{% macro extension_class() %}
  {#- The session extension's class (spark.sql.extensions); tied to EXTENSION_CLASS in spark_bucketing/contracts.py. -#}
  {{ return('sparkbucketing.BucketingExtensions') }}
{% endmacro %}

{% macro extension_switch() %}
  {#- The extension's per-session switch; tied to EXTENSION_SWITCH in spark_bucketing/contracts.py. -#}
  {{ return('spark_bucketing.extension.enabled') }}
{% endmacro %}

{% macro extension_active(loaded=none) %}
  {#- Whether the session loaded the extension (`loaded`: extension_loaded,
      read already) and has not switched it off. SET commands, whose answer
      comes with the statement: a SELECT, even of literals, is a fresh JVM's
      first query and costs about 0.3-0.4 s more there. -#}
  {%- set loaded = spark_bucketing.extension_loaded() if loaded is none else loaded -%}
  {{ return(loaded and spark_bucketing.switched_on(spark_bucketing.get_conf(spark_bucketing.extension_switch()))) }}
{% endmacro %}

{% macro switched_on(value) %}
  {#- Whether the extension's switch, set to `value` (none or '<undefined>' where it is not set), is on: on unless false. -#}
  {{ return(value is none or value | trim | lower != 'false') }}
{% endmacro %}

{% macro extension_loaded() %}
  {#- Whether the session loaded the extension (its statements and table
      functions answer even where its switch is off). -#}
  {{ return(spark_bucketing.extension_class() in spark_bucketing.get_conf('spark.sql.extensions').split(',') | map('trim') | list) }}
{% endmacro %}

{% macro spark_version() %}
  {#- The session's Spark as [major, minor], from version() (one query): for
      what Spark versions read differently (files_widen). -#}
  {%- set parts = (run_query('select version()').columns[0].values()[0] | string).split(' ')[0].split('.') -%}
  {{ return([parts[0] | int, parts[1] | int]) }}
{% endmacro %}
