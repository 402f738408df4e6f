{% macro is_incremental() %}
  {#- Whether this run of the model is incremental: for bucketed_incremental
      models, the table exists and no full refresh was asked; for every
      other model, dbt's own answer (dbt's is_incremental() is true only for
      materialized='incremental'). A project makes dbt's plain
      is_incremental() answer for both with one macro of its own that
      returns this one (docs/incremental.md). -#}
  {%- if model.config.materialized != 'bucketed_incremental' -%}{{ return(dbt.is_incremental()) }}{%- endif -%}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {{ return(relation is not none and relation.type == 'table' and not should_full_refresh()) }}
{% endmacro %}
