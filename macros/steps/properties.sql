{#- Table properties: where the metadata records live (catalog/metadata.sql). -#}

{% macro set_properties(relation, props) %}
  {%- if props -%}
    {%- call statement('spark_bucketing_set_properties') -%}
      alter table {{ relation }} set tblproperties (
        {%- for key, value in props.items() %}
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
