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

{% macro extension_active() %}
  {#- Whether the session loaded the extension and has not switched it off.
      One query of literals (no Spark job): Spark substitutes ${key} with
      the setting, and leaves it as it is when the key is unset (the switch
      is on unless set to false) or substitution is off (then false). -#}
  {%- set row = run_query("select '${spark.sql.extensions}' as e, '${" ~ spark_bucketing.extension_switch() ~ "}' as s")[0] -%}
  {%- set loaded = spark_bucketing.extension_class() in row[0].split(',') | map('trim') | list -%}
  {{ return(loaded and row[1] | trim | lower != 'false') }}
{% endmacro %}
