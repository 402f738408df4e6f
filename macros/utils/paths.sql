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
  {#- Whether `location` is one of the model's folders (owned_locations),
      or a build's (build_location). -#}
  {%- for candidate in owned if spark_bucketing.same_location(location, candidate) -%}{{ return(true) }}{%- endfor -%}
  {%- set build = '^' ~ modules.re.escape(spark_bucketing.location_path(owned[0])) ~ '__dbt_r[0-9]+_[0-9a-f]{12}$' -%}
  {{ return(modules.re.match(build, spark_bucketing.location_path(location)) is not none) }}
{% endmacro %}
