{% macro tested_relation(model) %}
  {#- The table a test reads, as the catalog names it: under `dbt build
      --empty` (or a microbatch sample) dbt hands a test its model as a
      subquery with no rows, which DESCRIBE and SHOW cannot take. The
      tests check the real table either way. -#}
  {{ return(api.Relation.create(database=model.database, schema=model.schema, identifier=model.identifier, type=model.type)) }}
{% endmacro %}
