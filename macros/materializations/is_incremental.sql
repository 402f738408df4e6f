{% macro is_incremental() %}
  {#- Whether this run of the model is incremental: for bucketed_incremental
      models, the table exists and no full refresh was asked; for every
      other model, dbt's own answer (dbt's is_incremental() is true only for
      materialized='incremental'). A project makes dbt's plain
      is_incremental() answer for both with one macro of its own that
      returns this one (docs/incremental.md). -#}
  {%- if model.resource_type == 'unit_test' -%}
    {#- A dbt unit test renders the model with `this` as its `this` input (a
        CTE's name, or none): the answer is the test's override of
        is_incremental (overrides: macros: {is_incremental: ..}), else false. -#}
    {%- set overrides = (model.get('overrides') or {}).get('macros') or {} -%}
    {{ return(overrides.get('is_incremental', overrides.get('dbt.is_incremental', false)) | string | lower == 'true') }}
  {%- endif -%}
  {%- if model.config.materialized != 'bucketed_incremental' -%}{{ return(dbt.is_incremental()) }}{%- endif -%}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {{ return(relation is not none and relation.type == 'table' and not should_full_refresh()) }}
{% endmacro %}
