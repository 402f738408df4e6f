{#- Reading the session's settings. The package never changes one: with
    `method: session` every dbt thread shares the session, so a change would
    be seen by the models running at the same time. -#}

{% macro get_conf(key) %}
  {%- set rows = run_query('set ' ~ key) -%}
  {{ return(rows[0][1] if rows | length > 0 else '<undefined>') }}
{% endmacro %}
