{#- Where tables live. Every table this package builds is EXTERNAL, at a
    location it chooses: a DROP or RENAME in the catalog then never moves or
    deletes files, so no catalog step can lose data. The package deletes
    folders itself, and only the folders it owns for a model. -#}

{% macro schema_location(relation) %}
  {%- set rows = run_query('describe schema extended ' ~ relation.schema) -%}
  {%- for row in rows if row[0] | lower in ('location', 'database location', 'namespace location') -%}
    {{ return(row[1].rstrip('/')) }}
  {%- endfor -%}
  {%- do exceptions.raise_compiler_error("spark_bucketing: cannot find the location of schema " ~ relation.schema) -%}
{% endmacro %}

{% macro owned_locations(spec, relation) %}
  {#- Full builds alternate between these two folders, so a new table never
      writes over the files of the table it replaces. -#}
  {%- set root = spec.location_root or spark_bucketing.schema_location(relation) -%}
  {%- set primary = root ~ '/' ~ relation.identifier -%}
  {{ return([primary, primary ~ '__dbt_alt']) }}
{% endmacro %}
