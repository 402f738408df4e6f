{#- The partitions the catalog lists. Partition folders are never named by
    hand: their names come from the files Spark wrote (file_dir_expr) or
    from the catalog (SHOW PARTITIONS), which spell them the same way (Spark
    escapes / = : % ' \ # ? [ ] * and control characters as %XX). -#}

{% macro listed_paths(relation) %}
  {#- The paths of the partitions the catalog lists (SHOW PARTITIONS), in its
      order: taken from the result without a Jinja step per partition. -#}
  {{ return(run_query('show partitions ' ~ relation).columns[0].values()) }}
{% endmacro %}

{% macro catalog_paths(relation) %}
  {#- The listed paths as a set. -#}
  {{ return(set(spark_bucketing.listed_paths(relation))) }}
{% endmacro %}

{% macro paths_values(paths) %}
  {#- {path: {column: value}} of partition paths as SHOW PARTITIONS spells them. -#}
  {%- set out = {} -%}
  {%- for path in paths -%}
    {%- set values = {} -%}
    {%- for part in path.split('/') -%}
      {%- set name, value = part.split('=', 1) -%}
      {#- Only an escaped name is unescaped: a macro call per partition costs seconds on 10,000. -#}
      {%- do values.update({spark_bucketing.unescape_path_name(name) if '%' in name else name:
          none if value == '__HIVE_DEFAULT_PARTITION__' else (spark_bucketing.unescape_path_name(value) if '%' in value else value)}) -%}
    {%- endfor -%}
    {%- do out.update({path: values}) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro catalog_partitions(relation) %}
  {#- The partitions the catalog lists: {path: {column: value}}. -#}
  {{ return(spark_bucketing.paths_values(spark_bucketing.listed_paths(relation))) }}
{% endmacro %}

{% macro partition_location(relation, values) %}
  {#- One partition's location as the catalog holds it (DESCRIBE .. PARTITION). -#}
  {%- for row in run_query('describe table extended ' ~ relation ~ ' ' ~ spark_bucketing.partition_clause(values)) if (row[0] or '') | trim == 'Location' -%}
    {{ return(row[1]) }}
  {%- endfor -%}
  {{ return(none) }}
{% endmacro %}
