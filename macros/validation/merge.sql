{#- The configs of incremental_strategy='merge', checked against the query's
    columns before any statement that writes. -#}

{% macro merge_config(columns, full_build=false) %}
  {#- The merge configs, checked against the query's columns (name -> type):
      {unique_key, update_columns, delete_column, predicates, validate_deletes, row_accounting},
      column names spelled as the query spells them. A full build matches
      no rows: as dbt's merge, it does not check unique_key (a key the query
      lacks fails the first incremental run). -#}
  {%- set resolved = {} -%}
  {%- for config_name in ('unique_key', 'merge_update_columns', 'merge_exclude_columns', 'merge_delete_column') -%}
    {%- set names = spark_bucketing.column_list_config(config_name, repeats=(config_name == 'unique_key')) -%}
    {%- if config_name == 'unique_key' and full_build -%}
      {%- set lowered = columns.keys() | map('lower') | list -%}
      {%- set names = names | map('lower') | select('in', lowered) | list -%}
    {%- endif -%}
    {%- do resolved.update({config_name: spark_bucketing.query_column_names(config_name, names, columns)}) -%}
  {%- endfor -%}
  {%- if resolved.merge_update_columns and resolved.merge_exclude_columns -%}
    {%- do spark_bucketing.config_error('merge_update_columns', "is set together with merge_exclude_columns",
        "set one of them: the columns a matched row takes from the new row, or the columns it keeps") -%}
  {%- endif -%}

  {%- set delete_column = resolved.merge_delete_column[0] if resolved.merge_delete_column else none -%}
  {%- if resolved.merge_delete_column | length > 1 -%}
    {%- do spark_bucketing.config_error('merge_delete_column', "names " ~ resolved.merge_delete_column | length ~ " columns", "name one boolean column") -%}
  {%- endif -%}
  {%- if delete_column is not none and columns[delete_column] | lower != 'boolean' -%}
    {%- do spark_bucketing.config_error('merge_delete_column', "column '" ~ delete_column ~ "' has type " ~ columns[delete_column]
        ~ "; it must be boolean (true: delete the row with this unique_key)",
        "select a boolean, e.g. op = 'D' as " ~ delete_column) -%}
  {%- endif -%}
  {%- if delete_column is not none and delete_column | lower in resolved.unique_key | map('lower') | list -%}
    {%- do spark_bucketing.config_error('merge_delete_column', "column '" ~ delete_column ~ "' is also in unique_key", "use a column of its own") -%}
  {%- endif -%}

  {#- What a matched row takes from the new row; the rest it keeps. -#}
  {%- set stored = columns.keys() | reject('equalto', delete_column) | list -%}
  {%- set update_columns = resolved.merge_update_columns if resolved.merge_update_columns
      else stored | reject('in', resolved.merge_exclude_columns) | list -%}

  {#- dbt's two names for it, read in dbt-spark's order. -#}
  {%- set predicates = config.get('predicates') or config.get('incremental_predicates') or [] -%}
  {%- if predicates is string -%}{%- set predicates = [predicates] -%}{%- endif -%}
  {%- set flags = {} -%}
  {%- for config_name in ('merge_validate_deletes', 'merge_row_accounting') -%}
    {%- set value = config.get(config_name, false) -%}
    {%- if value is not boolean -%}
      {%- do spark_bucketing.config_error(config_name, "must be true or false, got " ~ value, "set " ~ config_name ~ "=true or false") -%}
    {%- endif -%}
    {%- do flags.update({config_name: value}) -%}
  {%- endfor -%}
  {%- set validate = flags.merge_validate_deletes -%}
  {%- if validate and delete_column is none -%}
    {%- do spark_bucketing.config_error('merge_validate_deletes', "is true but merge_delete_column is not set", "set merge_delete_column to the column that marks deletes") -%}
  {%- endif -%}
  {{ return({'unique_key': resolved.unique_key, 'update_columns': update_columns, 'delete_column': delete_column,
             'predicates': predicates, 'validate_deletes': validate, 'row_accounting': flags.merge_row_accounting}) }}
{% endmacro %}
