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
  {#- The model's folders: `<root>/<alias>` and the folders named after it
      (owns_location). A full build writes into one of its run's own
      (build_location), so no build ever writes over the files of the
      table it replaces or of another build. Builds of earlier versions
      alternated between `<alias>` and `<alias>__dbt_alt`. -#}
  {%- set root = spec.location_root or spark_bucketing.schema_location(relation) -%}
  {%- set primary = root ~ '/' ~ relation.identifier -%}
  {{ return([primary, primary ~ '__dbt_alt']) }}
{% endmacro %}

{% macro build_location(owned, run_id) %}
  {#- The folder a full build of run `run_id` writes the table into. -#}
  {{ return(owned[0] ~ '__dbt_' ~ run_id) }}
{% endmacro %}
