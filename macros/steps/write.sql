{#- Writing rows: a bucketed write (one file per bucket per partition) into a
    new or emptied folder, and the staging of a model's rows. -#}

{% macro untrack_statement() %}
  {#- The session extension's statement that makes a new table keep its
      partitions in its folders only; tied to UntrackStatement in
      scala/Contracts.scala. -#}
  {{ return('spark_bucketing untrack partitions') }}
{% endmacro %}

{% macro untrack_partitions(relation) %}
  {#- Through the session extension: the new, empty `relation` keeps its
      partitions in its folders only, so that its write adds no partition to
      the metastore (one metastore row per partition) and its drop deletes
      none. Returns whether it does: a Hive-format table's partitions stay
      in the metastore. -#}
  {{ return(run_query(spark_bucketing.untrack_statement() ~ ' ' ~ relation)[0][0]) }}
{% endmacro %}

{% macro build_bucketed_relation(relation, spec, columns, sql, location, bucketed_rows=false, untrack=false) %}
  {#- Creates `relation` at `location` and fills it with one file per
      (partition, bucket). The folder is new or emptied, so a plain INSERT
      INTO writes it: the session's partitionOverwriteMode (which other
      models, such as dbt-spark's insert_overwrite, set) plays no part, and
      no session setting is changed. `bucketed_rows`: `sql` already holds
      each bucket's rows in one task (merge_output_is_bucketed), so they are
      written as they are, without the routed shuffle. `untrack` (with the
      session extension): a partitioned datasource table keeps its
      partitions in its folders only. Returns whether it does. -#}
  {%- if spec.bucket_hash == 'hive' -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- call statement('spark_bucketing_create') -%}
    {{ spark_bucketing.create_bucketed_table_sql(relation, spec, columns, location) }}
  {%- endcall -%}
  {#- A Hive-format table (the Hive hash) cannot be untracked: no statement for it. -#}
  {%- set untracked = untrack and spec.partition_by | length > 0 and spec.bucket_hash != 'hive'
      and spark_bucketing.untrack_partitions(relation) -%}
  {%- if spec.bucket_hash == 'hive' -%}
    {#- Spark writes a Hive Parquet/ORC table through its own writer, which
        takes the table's serde properties as write options. -#}
    {%- call statement('spark_bucketing_write_options') -%}
      alter table {{ relation }} set serdeproperties ('maxRecordsPerFile' = '0')
    {%- endcall -%}
  {%- endif -%}
  {%- call statement('main') -%}
    insert into table {{ relation }}
    {%- if spec.partition_by %} partition ({{ spark_bucketing.quoted(spec.partition_by) | join(", ") }}){% endif %}
    {%- if bucketed_rows %}
    select {{ spark_bucketing.quoted(spark_bucketing.partition_columns_last(columns.keys() | list, spec.partition_by)) | join(', ') }} from ({{ sql }}) as __sb_bucketed
    {%- else %}
    {{ spark_bucketing.distributed_select_sql(spec, columns, sql) }}
    {%- endif %}
  {%- endcall -%}
  {{ return(untracked) }}
{% endmacro %}

{% macro stage_new_rows(relation, columns, sql, location, partition_by, untrack=false) %}
  {#- Runs the model's query once into a plain side table at `location`,
      partitioned as the table is, so the catalog lists the partitions the
      new rows fall in (staged_partitions) without reading them. The folder
      is new: INSERT INTO, whatever the session's partitionOverwriteMode.
      `untrack` (with the session extension): the side table keeps its
      partitions in its folders only (untrack_partitions). Returns whether
      it does. -#}
  {%- set ordered = spark_bucketing.partition_columns_last(columns.keys() | list, partition_by) -%}
  {%- call statement('spark_bucketing_stage') -%}
    create table {{ relation }} (
    {%- for name in ordered %}
      {{ spark_bucketing.quoted([name])[0] }} {{ columns[name] }}{{ ',' if not loop.last }}
    {%- endfor %}
    ) using parquet
    {%- if partition_by %} partitioned by ({{ spark_bucketing.quoted(partition_by) | join(', ') }}){% endif %}
    location {{ spark_bucketing.sql_string(location) }}
  {%- endcall -%}
  {%- set untracked = untrack and partition_by | length > 0 and spark_bucketing.untrack_partitions(relation) -%}
  {%- call statement('spark_bucketing_stage_rows') -%}
    insert into table {{ relation }}
    {%- if partition_by %} partition ({{ spark_bucketing.quoted(partition_by) | join(', ') }}){% endif %}
    select {{ spark_bucketing.quoted(ordered) | join(', ') }} from ({{ sql }}) as __sb_model
  {%- endcall -%}
  {{ return(untracked) }}
{% endmacro %}

{% macro staged_partitions(relation, untracked=false) %}
  {#- The partition values the staged new rows fall in, from the catalog (or
      the folders of an `untracked` side table): [{column: value as string,
      or none for NULL}]. -#}
  {{ return(spark_bucketing.catalog_partitions(relation, from_folders=untracked).values() | list) }}
{% endmacro %}
