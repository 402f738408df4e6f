{#- Table properties: where the metadata records live (catalog/metadata.sql). -#}

{% macro unredacted(props) %}
  {#- `props` written so that Spark shows them back: SHOW TBLPROPERTIES (and
      DESCRIBE) hide the value of a property whose key or value matches
      spark.sql.redaction.options.regex, by default (?i)url, which a folder
      named hourly_events matches. A JSON value's "url" is written with its
      u escaped (\u0075), which every JSON reader decodes; record keys
      avoid it (partition_key). Values are searched once, all together. -#}
  {%- if not modules.re.search('(?i)url', props.values() | join('\n')) -%}{{ return(props) }}{%- endif -%}
  {%- set out = {} -%}
  {%- for key, value in props.items() -%}
    {%- if value[:1] in ('{', '[') -%}
      {%- set value = modules.re.sub('U(?=[rR][lL])', '\\\\u0055', modules.re.sub('u(?=[rR][lL])', '\\\\u0075', value)) -%}
    {%- endif -%}
    {%- do out.update({key: value}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro set_properties(relation, props) %}
  {%- if props -%}
    {%- call statement('spark_bucketing_set_properties') -%}
      alter table {{ relation }} set tblproperties (
        {%- for key, value in spark_bucketing.unredacted(props).items() %}
        {{ spark_bucketing.sql_string(key) }} = {{ spark_bucketing.sql_string(value) }}{{ ',' if not loop.last }}
        {%- endfor %}
      )
    {%- endcall -%}
  {%- endif -%}
{% endmacro %}

{% macro unset_properties(relation, keys) %}
  {%- if keys -%}
    {%- call statement('spark_bucketing_unset_properties') -%}
      alter table {{ relation }} unset tblproperties if exists (
        {%- for key in keys %}{{ spark_bucketing.sql_string(key) }}{{ ', ' if not loop.last }}{% endfor -%}
      )
    {%- endcall -%}
  {%- endif -%}
{% endmacro %}
