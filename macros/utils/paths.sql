{#- Comparing locations. Catalog locations carry a scheme (file:/x); configs
    may not (/x). -#}

{% macro location_path(location) %}
  {%- set strip = modules.re.compile('^[a-zA-Z][a-zA-Z0-9+.-]*:(//)?') -%}
  {{ return(strip.sub('/', (location or '').rstrip('/')).lstrip('/')) }}
{% endmacro %}

{% macro same_location(a, b) %}
  {{ return(spark_bucketing.location_path(a) == spark_bucketing.location_path(b)) }}
{% endmacro %}

{% macro is_under(location, root) %}
  {%- set base = spark_bucketing.location_path(root) -%}
  {{ return(base != '' and spark_bucketing.location_path(location).startswith(base ~ '/')) }}
{% endmacro %}

{% macro owns_location(location, owned) %}
  {%- for candidate in owned if spark_bucketing.same_location(location, candidate) -%}{{ return(true) }}{%- endfor -%}
  {{ return(false) }}
{% endmacro %}

{% macro free_location(owned, old_info) %}
  {#- Of a model's two folders (owned_locations), the one the table is not in. -#}
  {%- if old_info and spark_bucketing.same_location(old_info.location, owned[0]) -%}{{ return(owned[1]) }}{%- endif -%}
  {{ return(owned[0]) }}
{% endmacro %}
