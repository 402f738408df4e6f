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

{% macro same_location(a, b) %}
  {#- Catalog locations carry a scheme (file:/x); configs may not (/x). -#}
  {%- set strip = modules.re.compile('^[a-zA-Z][a-zA-Z0-9+.-]*:(//)?') -%}
  {{ return(strip.sub('/', (a or '').rstrip('/')).lstrip('/') == strip.sub('/', (b or '').rstrip('/')).lstrip('/')) }}
{% endmacro %}

{% macro is_under(location, root) %}
  {%- set strip = modules.re.compile('^[a-zA-Z][a-zA-Z0-9+.-]*:(//)?') -%}
  {%- set loc = strip.sub('/', location or '').lstrip('/') -%}
  {%- set base = strip.sub('/', (root or '').rstrip('/')).lstrip('/') -%}
  {{ return(base != '' and loc.startswith(base ~ '/')) }}
{% endmacro %}

{% macro owns_location(location, owned) %}
  {%- for candidate in owned if spark_bucketing.same_location(location, candidate) -%}{{ return(true) }}{%- endfor -%}
  {{ return(false) }}
{% endmacro %}

{% macro free_location(owned, old_info) %}
  {%- if old_info and spark_bucketing.same_location(old_info.location, owned[0]) -%}{{ return(owned[1]) }}{%- endif -%}
  {{ return(owned[0]) }}
{% endmacro %}

{% macro delete_locations(locations, scratch_relation) %}
  {#- Spark SQL has no statement that deletes a folder, but dropping a managed
      table deletes its folder and the folders of its partitions, wherever
      they are. So one scratch managed table takes every folder as a
      partition, then is dropped: three statements for any number of folders.
      The metastore creates a partition's folder when it is missing, so a
      folder that is already gone is no error (and logs none). -#}
  {%- if not locations -%}{{ return(none) }}{%- endif -%}
  {%- do spark_bucketing.drop_if_listed(scratch_relation) -%}
  {%- call statement('spark_bucketing_scratch') -%}
    create table {{ scratch_relation }} (unused int, __sb_folder int) using parquet partitioned by (__sb_folder)
  {%- endcall -%}
  {%- for batch in locations | batch(500) -%}
    {%- set first = loop.index0 * 500 -%}
    {%- call statement('spark_bucketing_scratch_folders') -%}
      alter table {{ scratch_relation }} add
      {%- for location in batch %}
        partition (__sb_folder = {{ first + loop.index0 }}) location {{ spark_bucketing.sql_string(location) }}
      {%- endfor %}
    {%- endcall -%}
  {%- endfor -%}
  {%- do adapter.drop_relation(scratch_relation) -%}
{% endmacro %}

{% macro drop_if_listed(relation) %}
  {#- Drops a side entry a failed run may have left. dbt listed the schema
      when the run started, so its cache answers without a statement. -#}
  {%- set found = adapter.get_relation(database=relation.database, schema=relation.schema, identifier=relation.identifier) -%}
  {%- if found is not none -%}{%- do adapter.drop_relation(found) -%}{%- endif -%}
{% endmacro %}
