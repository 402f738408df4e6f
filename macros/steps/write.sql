{#- Writing rows: a bucketed write (one file per bucket per partition) into a
    new or emptied folder, and the staging of a model's rows. -#}

{% macro write_folder_statement() %}
  {#- The session extension's statement that writes a query's rows into a
      bucketed folder with no catalog entry; tied to WriteFolderStatement in
      scala/Contracts.scala. -#}
  {{ return('spark_bucketing write folder') }}
{% endmacro %}

{% macro bucketed_write_sql(spec, columns, sql, bucketed_rows) -%}
  {#- The rows of `sql` as a bucketed write takes them, in table order:
      routed (distributed_select_sql), or as they are where each bucket's
      rows are in one task already (`bucketed_rows`). -#}
  {%- if bucketed_rows -%}
    select {{ spark_bucketing.quoted(spark_bucketing.partition_columns_last(columns.keys() | list, spec.partition_by)) | join(', ') }} from ({{ sql }}) as __sb_bucketed
  {%- else -%}
    {{ spark_bucketing.distributed_select_sql(spec, columns, sql) }}
  {%- endif -%}
{%- endmacro %}

{% macro writes_folders(spec, extension) %}
  {#- Whether a run writes its partitions through the session extension
      (`extension`: extension_active) into a bucketed folder with no catalog
      entry (write_bucketed_folder), rather than through a side table: any
      partitioned table (an unpartitioned one is replaced whole, through
      build_bucketed_relation). -#}
  {{ return(extension and spec.partition_by | length > 0) }}
{% endmacro %}

{% macro folder_description(location, file_format, columns, partition_by, clustered_by=[], sorted_by=[], buckets=0, hive_version=none) %}
  {#- A folder described as a table would be, for the session extension's
      folder statement and functions: {location, format, columns: [[name,
      type]] in table order (partition columns last), partition_by,
      clustered_by, sorted_by, buckets (0: unbucketed)}, and
      bucketing_version where `hive_version` (1 or 2: Hive's hash of that
      version, Hive's file names; else Spark's hash). -#}
  {%- set pairs = [] -%}
  {%- for name in spark_bucketing.partition_columns_last(columns.keys() | list, partition_by) -%}
    {%- do pairs.append([name, columns[name]]) -%}
  {%- endfor -%}
  {%- set folder = {'location': location, 'format': file_format, 'columns': pairs, 'partition_by': partition_by,
                    'clustered_by': clustered_by, 'sorted_by': sorted_by, 'buckets': buckets} -%}
  {%- if hive_version is not none -%}{%- do folder.update({'bucketing_version': hive_version}) -%}{%- endif -%}
  {{ return(folder) }}
{% endmacro %}

{% macro bucketed_folder(spec, columns, location) %}
  {#- The description (folder_description) of a folder holding `spec`'s
      buckets. A Hive-hash one is named in lower case, as the Hive table
      declares its columns. -#}
  {%- if spec.bucket_hash != 'hive' -%}
    {{ return(spark_bucketing.folder_description(location, spec.file_format, columns, spec.partition_by,
        spec.clustered_by, spec.sorted_by or [], spec.buckets)) }}
  {%- endif -%}
  {%- set lowered = {} -%}
  {%- for name, data_type in columns.items() -%}{%- do lowered.update({name | lower: data_type}) -%}{%- endfor -%}
  {{ return(spark_bucketing.folder_description(location, spec.file_format, lowered, spec.partition_by | map('lower') | list,
      spec.clustered_by | map('lower') | list, (spec.sorted_by or []) | map('lower') | list, spec.buckets,
      hive_version=spec.get('bucketing_version', 1))) }}
{% endmacro %}

{% macro hive_rows_checked_sql(spec, sql) -%}
  {#- The rows of `sql`, each checked as it is written: Spark's writer puts
      a row of a Hive v1 table in the bucket of Spark's own Hive hash, and
      the write fails, before anything is published, on a row for which Hive's
      own hash function (bucket_id_expr) gives another bucket. The check that
      would otherwise read every written row again. Hive's function (a Hive
      UDF, the costly one) is evaluated once per row: the rows are routed by
      the writer's (hive_writer_routed). -#}
  {%- set cols = spark_bucketing.quoted(spec.clustered_by) -%}
  {%- set hive = spark_bucketing.bucket_id_expr(spec.clustered_by, spec.buckets, 'hive', 1) -%}
  {%- set writer = spark_bucketing.hive_bucket_sql(spark_bucketing.hive_writer_hash_function(), spec.clustered_by, spec.buckets) -%}
  {%- set keys -%}concat_ws(', '{% for c in cols %}, cast({{ c }} as string){% endfor %}){%- endset -%}
  select * from ({{ sql }}) as __sb_checked
  where case when {{ hive }} = {{ writer }} then true
        else raise_error(concat({{ spark_bucketing.sql_string('spark_bucketing: model ' ~ model.unique_id ~ ': a row with ('
            ~ (spec.clustered_by | join(', ')) ~ ') = (') }}, {{ keys }}, ') is in bucket ', cast({{ hive }} as string),
            {{ spark_bucketing.sql_string(" by Hive's own hash but Spark's Hive writer would put it in bucket ") }}, cast({{ writer }} as string),
            {{ spark_bucketing.sql_string("; nothing was published. Fix: bucket on columns of another type, or set bucket_hash='spark'") }})) end
{%- endmacro %}

{% macro hive_writer_routed(spec) %}
  {#- `spec`, its rows routed (distributed_select_sql) by the hash Spark's
      Hive writer places them by: a native function, where Hive's own is a
      Hive UDF. Only where every row is checked against Hive's own
      (hive_rows_checked_sql), which makes the two equal. -#}
  {%- set routed = dict(spec) -%}
  {%- do routed.update({'route_hash_function': spark_bucketing.hive_writer_hash_function()}) -%}
  {{ return(routed) }}
{% endmacro %}

{% macro write_bucketed_folder(spec, columns, sql, location, bucketed_rows, then=none, records_of=none) %}
  {#- Writes the rows of `sql` as `spec`'s buckets into the new folder
      `location` through the session extension (write_folder): the files,
      names and sort Spark's writer gives a table of that spec. Hive's v1
      rows are checked against Hive's own hash as they are written
      (hive_rows_checked_sql); Hive's v2 rows are placed by v2, which
      Spark's Hive writer cannot do. `then`: a query run in the same
      statement once the folder is written (the write's check,
      folder_check_sql); `records_of`: write_folder's. Returns what was written, {'relation': none,
      'folder': the folder's description, 'check': `then`'s rows or none}. -#}
  {%- set folder = spark_bucketing.bucketed_folder(spec, columns, location) -%}
  {%- if folder.get('bucketing_version') == 1 -%}
    {#- Hive's own hash is the extension's function (hive_hash_v1_function): no temporary function to create. -#}
    {%- set rows_sql = spark_bucketing.hive_rows_checked_sql(spec,
        spark_bucketing.bucketed_write_sql(spark_bucketing.hive_writer_routed(spec), columns, sql, bucketed_rows)) -%}
  {%- else -%}
    {%- set rows_sql = spark_bucketing.bucketed_write_sql(spec, columns, sql, bucketed_rows) -%}
  {%- endif -%}
  {{ return({'relation': none, 'folder': folder, 'check': spark_bucketing.write_folder(folder, rows_sql, then=then, records_of=records_of)}) }}
{% endmacro %}

{% macro write_folder(folder, sql, statement_name='main', then=none, records_of=none) %}
  {#- Through the session extension: writes the rows of `sql` (in the
      folder's column order) into the new folder `folder` describes
      (folder_description) as an INSERT INTO a table of that description
      at that folder writes them (for a bucketed one the same files, one per
      bucket per partition, no row limit per file), with no catalog entry:
      no side table to create and drop, no partition added to the
      metastore. The statement refuses a folder that exists
      (`statement_name`: dbt's name for it; 'main' is the model's write).
      `then`: a query the statement runs once the folder is written, as a
      statement of its own would see it, a round trip saved; returns its
      rows (else none). `records_of`: a table whose partitions' record and
      folder each row of `then` carries too, by its __sb_path (__sb_record,
      __sb_location; checked_partition_records). -#}
  {%- call statement(statement_name, fetch_result=then is not none) -%}
    {{ spark_bucketing.write_folder_statement() }} {{ spark_bucketing.sql_string(tojson(folder)) }}
    {%- if then is not none %} then {{ spark_bucketing.sql_string(then) }}
    {%- if records_of is not none %} records of {{ records_of }}{% endif %}{% endif %} as
    {{ sql }}
  {%- endcall -%}
  {{ return(load_result(statement_name).table if then is not none else none) }}
{% endmacro %}

{% macro build_bucketed_relation(relation, spec, columns, sql, location, bucketed_rows=false) %}
  {#- Creates `relation` at `location` and fills it with one file per
      (partition, bucket). The folder is new or emptied, so a plain INSERT
      INTO writes it: the session's partitionOverwriteMode (which other
      models, such as dbt-spark's insert_overwrite, set) plays no part, and
      no session setting is changed. `bucketed_rows`: `sql` already holds
      each bucket's rows in one task (merge_output_is_bucketed), so they are
      written as they are, without the routed shuffle. -#}
  {%- if spec.get('bucketing_version', 1) == 2 -%}
    {#- The files first: the new table then finds its partitions in them (one listing of the new folder). -#}
    {%- do spark_bucketing.write_bucketed_folder(spec, columns, sql, location, bucketed_rows) -%}
    {%- do spark_bucketing.checkpoint('v2_after_folder_write') -%}
    {%- call statement('spark_bucketing_create') -%}
      {{ spark_bucketing.create_bucketed_table_sql(relation, spec, columns, location) }}
    {%- endcall -%}
    {%- do spark_bucketing.checkpoint('v2_after_create') -%}
    {%- if spec.partition_by -%}
      {%- call statement('spark_bucketing_partitions') -%}
        alter table {{ relation }} recover partitions
      {%- endcall -%}
    {%- endif -%}
    {{ return(none) }}
  {%- endif -%}
  {%- if spec.bucket_hash == 'hive' -%}{%- do spark_bucketing.register_hash_functions() -%}{%- endif -%}
  {%- call statement('spark_bucketing_create') -%}
    {{ spark_bucketing.create_bucketed_table_sql(relation, spec, columns, location) }}
  {%- endcall -%}
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
    {{ spark_bucketing.bucketed_write_sql(spec, columns, sql, bucketed_rows) }}
  {%- endcall -%}
{% endmacro %}

{% macro folder_read_function() %}
  {#- The session extension's table function: a folder's rows, read as a
      table of its description reads them; tied to FolderReadFunction in
      scala/Contracts.scala. -#}
  {{ return('spark_bucketing_folder') }}
{% endmacro %}

{% macro folder_source(folder) %}
  {#- What a query reads a folder's rows from (`folder`: folder_description). -#}
  {{ return(spark_bucketing.folder_read_function() ~ '(' ~ spark_bucketing.sql_string(tojson(folder)) ~ ')') }}
{% endmacro %}

{% macro stage_new_rows(relation, columns, sql, location, partition_by, extension) %}
  {#- Runs the model's query once into `location`, partitioned as the table
      is. The folder is new: INSERT INTO, whatever the session's
      partitionOverwriteMode. With the session extension (`extension`:
      extension_active) it is a folder with no catalog entry (write_folder),
      read through the extension's table function; else the plain side
      table `relation`. Returns {'source': what a query reads the staged
      rows from, 'relation': the side table or none, 'folder': the folder's
      description or none}. -#}
  {%- set ordered = spark_bucketing.partition_columns_last(columns.keys() | list, partition_by) -%}
  {%- set rows_sql = 'select ' ~ (spark_bucketing.quoted(ordered) | join(', ')) ~ ' from (' ~ sql ~ ') as __sb_model' -%}
  {%- if extension -%}
    {%- set folder = spark_bucketing.folder_description(location, 'parquet', columns, partition_by) -%}
    {%- do spark_bucketing.write_folder(folder, rows_sql, 'spark_bucketing_stage_rows') -%}
    {{ return({'source': spark_bucketing.folder_source(folder),
               'relation': none, 'folder': folder}) }}
  {%- endif -%}
  {%- call statement('spark_bucketing_stage') -%}
    create table {{ relation }} (
    {%- for name in ordered %}
      {{ spark_bucketing.quoted([name])[0] }} {{ columns[name] }}{{ ',' if not loop.last }}
    {%- endfor %}
    ) using parquet
    {%- if partition_by %} partitioned by ({{ spark_bucketing.quoted(partition_by) | join(', ') }}){% endif %}
    location {{ spark_bucketing.sql_string(location) }}
  {%- endcall -%}
  {%- call statement('spark_bucketing_stage_rows') -%}
    insert into table {{ relation }}
    {%- if partition_by %} partition ({{ spark_bucketing.quoted(partition_by) | join(', ') }}){% endif %}
    {{ rows_sql }}
  {%- endcall -%}
  {{ return({'source': relation | string, 'relation': relation, 'folder': none}) }}
{% endmacro %}

{% macro staged_partitions(staged, partition_by) %}
  {#- The partition values the staged new rows fall in (`staged`:
      stage_new_rows), without reading the rows: from the side table's
      catalog, or from the folder's listing (its files' footers, no Spark
      job): [{column: value as string, or none for NULL}]. -#}
  {%- if staged.folder is none -%}
    {{ return(spark_bucketing.catalog_partitions(staged.relation).values() | list) }}
  {%- endif -%}
  {%- set cols = [] -%}
  {%- for p in partition_by -%}{%- do cols.append('__sb_p' ~ loop.index0) -%}{%- endfor -%}
  {#- A row per file, deduplicated here: a DISTINCT would be a Spark job. -#}
  {%- set out = {} -%}
  {%- for row in (run_query('select ' ~ (cols | join(', ')) ~ ' from ('
      ~ spark_bucketing.folder_files_sql(staged.folder, partition_by) ~ ') as __sb_staged') if cols else []) -%}
    {%- set values = {} -%}
    {%- for p in partition_by -%}{%- do values.update({p: row[loop.index0]}) -%}{%- endfor -%}
    {%- do out.update({tojson(values): values}) -%}
  {%- endfor -%}
  {{ return(out.values() | list) }}
{% endmacro %}
