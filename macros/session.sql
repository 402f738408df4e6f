{#- Session settings a bucketed write needs, set for the write and put back
    afterwards so that later models of the same run do not inherit them. -#}

{% macro write_settings() %}
  {{ return({
      'spark.sql.files.maxRecordsPerFile': '0',
      'spark.sql.sources.partitionOverwriteMode': 'static',
  }) }}
{% endmacro %}

{% macro get_conf(key) %}
  {%- set rows = run_query('set ' ~ key) -%}
  {{ return(rows[0][1] if rows | length > 0 else '<undefined>') }}
{% endmacro %}

{% macro apply_settings(settings) %}
  {#- Sets each key that differs from the session's value; returns what to restore. -#}
  {%- set previous = {} -%}
  {%- for key, value in settings.items() -%}
    {%- set current = spark_bucketing.get_conf(key) -%}
    {%- if current | lower != value | lower -%}
      {%- do previous.update({key: current}) -%}
      {%- do run_query('set ' ~ key ~ '=' ~ value) -%}
    {%- endif -%}
  {%- endfor -%}
  {{ return(previous) }}
{% endmacro %}

{% macro restore_settings(previous) %}
  {%- for key, value in previous.items() -%}
    {%- if value == '<undefined>' -%}
      {%- do run_query('reset ' ~ key) -%}
    {%- else -%}
      {%- do run_query('set ' ~ key ~ '=' ~ value) -%}
    {%- endif -%}
  {%- endfor -%}
{% endmacro %}
