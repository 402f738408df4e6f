{% macro is_incremental() %}
  {#- dbt's is_incremental() is true only for materialized='incremental';
      this one answers for bucketed_incremental models. -#}
  {%- if not execute -%}{{ return(false) }}{%- endif -%}
  {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
  {{ return(relation is not none and relation.type == 'table'
      and model.config.materialized == 'bucketed_incremental' and not should_full_refresh()) }}
{% endmacro %}
