{#- Reading and validating the bucketing configs. Every check here runs before
    any statement that writes, and names the model, the config, the problem
    and the fix (config_error). -#}
{% macro column_list_config(config_name, required=false, repeats=false, misspelt={}) %}
  {#- A column or a list of columns, returned as a list of names; a column
      listed twice is an error, or with `repeats` (dbt's unique_key) taken once.
      `misspelt`: misspelt_configs, named in the error when a required one is missing. -#}
  {%- set raw = config.get(config_name) -%}
  {%- if raw is none or (raw is string and raw | trim == '') or (raw is iterable and raw is not string and raw | length == 0) -%}
    {%- if required -%}
      {%- set written = misspelt.items() | selectattr('1', 'equalto', config_name) | map(attribute='0') | list -%}
      {%- do spark_bucketing.config_error(config_name, "is missing or empty"
          ~ (" (the model sets '" ~ (written | join("', '")) ~ "', which this package does not read)" if written else ''),
          ("rename '" ~ written[0] ~ "' to " ~ config_name ~ ": " if written else "set " ~ config_name ~ " to ") ~ "a column or a list of columns, e.g. " ~ config_name ~ "=['customer_id']") -%}
    {%- endif -%}
    {{ return([]) }}
  {%- endif -%}
  {%- set names = [raw] if raw is string else raw -%}
  {%- if raw is mapping or raw is not iterable -%}
    {%- do spark_bucketing.config_error(config_name, "expected a column name or a list of column names, got " ~ raw,
        "write e.g. " ~ config_name ~ "=['customer_id']") -%}
  {%- endif -%}
  {%- set out = [] -%}
  {%- for name in names -%}
    {%- if name is not string or name | trim == '' -%}
      {%- do spark_bucketing.config_error(config_name, "entry " ~ loop.index ~ " is not a column name: " ~ name,
          "list column names as strings") -%}
    {%- endif -%}
    {%- set repeated = name | trim | lower in out | map('lower') | list -%}
    {%- if repeated and not repeats -%}
      {%- do spark_bucketing.config_error(config_name, "column '" ~ name ~ "' is listed twice", "list each column once") -%}
    {%- endif -%}
    {%- if not repeated -%}{%- do out.append(name | trim) -%}{%- endif -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro hash_config() %}
  {#- (bucket_hash, bucketing_version): the hash family, and Hive's version of it. -#}
  {%- set bucket_hash = config.get('bucket_hash', 'hive') -%}
  {%- if bucket_hash not in ('hive', 'spark') -%}
    {%- do spark_bucketing.config_error('bucket_hash', "must be 'hive' or 'spark', got '" ~ bucket_hash ~ "'",
        "use bucket_hash='hive' for tables that Hive and Trino read as bucketed, or bucket_hash='spark' for shuffle-free joins in Spark") -%}
  {%- endif -%}
  {%- set bucketing_version = config.get('bucketing_version', 1) -%}
  {%- if bucketing_version is boolean or bucketing_version not in (1, 2) -%}
    {%- do spark_bucketing.config_error('bucketing_version', "must be 1 or 2, got " ~ ("the string '" ~ bucketing_version ~ "'" if bucketing_version is string else bucketing_version | string),
        "leave it out for Hive's bucketing v1 (what Hive 2 and Trino write by default), or set bucketing_version=2 (no quotes) for Hive 3's v2") -%}
  {%- elif bucketing_version == 2 and bucket_hash != 'hive' -%}
    {%- do spark_bucketing.config_error('bucketing_version', "is a version of Hive's hash, but bucket_hash is '" ~ bucket_hash ~ "'",
        "set bucket_hash='hive' with bucketing_version=2, or remove bucketing_version") -%}
  {%- endif -%}
  {{ return((bucket_hash, bucketing_version)) }}
{% endmacro %}

{% macro misspelt_configs() %}
  {#- {config the model sets: the package's config it most likely means} for each config whose name is a
      misspelling of a bucketing config or another tool's name for it. dbt keeps a config that no
      materialization reads without a word: `sort_by` would build the table unsorted. -#}
  {%- set meant = {
      'sort_by': 'sorted_by', 'sorted_on': 'sorted_by', 'sort_keys': 'sorted_by', 'sortkey': 'sorted_by',
      'sorted': 'sorted_by', 'order_by': 'sorted_by', 'sorted_by_columns': 'sorted_by',
      'cluster_by': 'clustered_by', 'clustered_on': 'clustered_by', 'clustered': 'clustered_by',
      'bucket_by': 'clustered_by', 'bucketed_by': 'clustered_by', 'bucket_columns': 'clustered_by',
      'bucket_keys': 'clustered_by', 'bucket_key': 'clustered_by', 'bucket_column': 'clustered_by',
      'bucket': 'buckets', 'num_buckets': 'buckets', 'n_buckets': 'buckets', 'bucket_count': 'buckets',
      'number_of_buckets': 'buckets', 'num_bucket': 'buckets', 'buckets_count': 'buckets',
      'partitioned_by': 'partition_by', 'partition': 'partition_by', 'partitions_by': 'partition_by',
      'partition_columns': 'partition_by',
      'hash': 'bucket_hash', 'bucketing_hash': 'bucket_hash', 'hash_function': 'bucket_hash',
      'bucket_hash_function': 'bucket_hash', 'bucket_version': 'bucketing_version',
      'hive_bucketing_version': 'bucketing_version', 'on_buckets_change': 'on_bucket_change',
      'on_bucket_changes': 'on_bucket_change', 'on_spec_change': 'on_bucket_change',
      'max_file_per_bucket': 'max_files_per_bucket', 'files_per_bucket': 'max_files_per_bucket',
  } -%}
  {%- set out = {} -%}
  {%- for key in (model.config or {}).keys() if key in meant -%}{%- do out.update({key: meant[key]}) -%}{%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro warn_misspelt_configs(misspelt) %}
  {%- for written, intended in misspelt.items() | sort -%}
    {%- do exceptions.warn("spark_bucketing: model '" ~ model.unique_id ~ "': config '" ~ written ~ "' is not a config of "
        ~ model.config.materialized ~ " and is ignored" ~ (" ('cluster_by' is Databricks' liquid clustering)" if written == 'cluster_by' else '')
        ~ ". Did you mean '" ~ intended ~ "'? Fix: rename it to " ~ intended ~ " (configs: docs/configs.md)") -%}
  {%- endfor -%}
{% endmacro %}

{% macro bucket_spec() %}
  {#- The model's bucketing configs, checked for shape and range. Column checks
      that need the query's schema happen in validate_columns. -#}
  {%- set misspelt = spark_bucketing.misspelt_configs() -%}
  {%- do spark_bucketing.warn_misspelt_configs(misspelt) -%}
  {%- set clustered_by = spark_bucketing.column_list_config('clustered_by', required=true, misspelt=misspelt) -%}
  {#- The concurrency settings are read in the commit, after the write: checked here, before it. -#}
  {%- do spark_bucketing.validate_concurrency_configs() -%}
  {%- set sorted_by = spark_bucketing.column_list_config('sorted_by') -%}
  {%- set partition_by = spark_bucketing.column_list_config('partition_by') -%}

  {%- set buckets = config.get('buckets') -%}
  {%- if buckets is none -%}
    {%- set written = misspelt.items() | selectattr('1', 'equalto', 'buckets') | map(attribute='0') | list -%}
    {%- do spark_bucketing.config_error('buckets', "is missing" ~ (" (the model sets '" ~ (written | join("', '")) ~ "', which this package does not read)" if written else ''),
        ("rename '" ~ written[0] ~ "' to buckets: " if written else "set buckets to ") ~ "an integer between 1 and 100000, e.g. buckets=16") -%}
  {%- elif buckets is boolean or buckets is not integer -%}
    {%- do spark_bucketing.config_error('buckets', "must be an integer, got " ~ ("the string '" ~ buckets ~ "'" if buckets is string else buckets | string),
        "set buckets to an integer between 1 and 100000 without quotes, e.g. buckets=16") -%}
  {%- elif buckets < 1 or buckets > 100000 -%}
    {%- do spark_bucketing.config_error('buckets', "must be between 1 and 100000, got " ~ buckets,
        "choose a bucket count in that range; powers of two let Trino read tables with different counts together") -%}
  {%- endif -%}

  {%- set bucket_hash, bucketing_version = spark_bucketing.hash_config() -%}

  {%- set file_format = config.get('file_format', 'parquet') -%}
  {%- if file_format not in ('parquet', 'orc') -%}
    {%- do spark_bucketing.config_error('file_format', "bucketed tables support 'parquet' or 'orc', got '" ~ file_format ~ "'",
        "set file_format='parquet' (the default) or file_format='orc'") -%}
  {%- endif -%}

  {%- set verify_layout = config.get('verify_layout', true) -%}
  {%- if verify_layout is not boolean and verify_layout != 'rows' -%}
    {%- do spark_bucketing.config_error('verify_layout', "must be true, 'rows' or false, got " ~ verify_layout, "set verify_layout=true (default), 'rows' or false") -%}
  {%- endif -%}

  {%- set bucket_records = config.get('bucket_records', 'table_properties') -%}
  {%- if bucket_records not in ('table_properties', 'partition_parameters') -%}
    {%- do spark_bucketing.config_error('bucket_records', "must be 'table_properties' or 'partition_parameters', got '" ~ bucket_records ~ "'",
        "keep the default 'table_properties', or set 'partition_parameters' (needs the session extension) for tables of thousands of partitions") -%}
  {%- endif -%}

  {%- set location_root = config.get('location_root') -%}
  {{ return({
      'clustered_by': clustered_by,
      'sorted_by': sorted_by,
      'partition_by': partition_by,
      'buckets': buckets,
      'bucket_hash': bucket_hash,
      'bucketing_version': bucketing_version,
      'file_format': file_format,
      'verify_layout': verify_layout,
      'bucket_records': bucket_records,
      'location_root': location_root.rstrip('/') if location_root else none,
      'max_files_per_bucket': spark_bucketing.max_files_config(),
  }) }}
{% endmacro %}

{% macro max_files_config() %}
  {#- Config `max_files_per_bucket`: how many files a bucket of a partition
      may hold (appends that add files, strategies/append.sql). -#}
  {%- set n = config.get('max_files_per_bucket', 1) -%}
  {%- if n is boolean or n is not integer or n < 1 or n > 1000 -%}
    {%- do spark_bucketing.config_error('max_files_per_bucket', "must be an integer between 1 and 1000, got " ~ n,
        "keep 1 (one file per bucket, the default), or allow appends to add files, e.g. max_files_per_bucket=24 for hourly appends into a daily partition") -%}
  {%- endif -%}
  {{ return(n) }}
{% endmacro %}

{% macro query_column_names(config_name, names, columns) %}
  {#- `names` (from config `config_name`) spelled as the query's columns
      (name -> type) spell them, matched in any case as Spark resolves them. -#}
  {%- set by_lower = {} -%}
  {%- for name in columns -%}{%- do by_lower.update({name | lower: name}) -%}{%- endfor -%}
  {%- set out = [] -%}
  {%- for name in names -%}
    {%- if name | lower not in by_lower -%}
      {%- do spark_bucketing.config_error(config_name, "column '" ~ name ~ "' is not produced by the model's query (it returns: "
          ~ (columns.keys() | join(', ')) ~ ")", "select a column named '" ~ name ~ "' or name one of the query's columns") -%}
    {%- endif -%}
    {%- do out.append(by_lower[name | lower]) -%}
  {%- endfor -%}
  {{ return(out) }}
{% endmacro %}

{% macro validate_columns(spec, columns) %}
  {#- Checks the configs against the query's schema (name -> type) and returns
      the spec with column names spelled as the query spells them. -#}
  {%- set resolved = {} -%}
  {%- for config_name in ('clustered_by', 'sorted_by', 'partition_by') -%}
    {%- do resolved.update({config_name: spark_bucketing.query_column_names(config_name, spec[config_name], columns)}) -%}
  {%- endfor -%}

  {%- set partition_lower = resolved.partition_by | map('lower') | list -%}
  {%- for config_name in ('clustered_by', 'sorted_by') -%}
    {%- for name in resolved[config_name] -%}
      {%- if name | lower in partition_lower -%}
        {%- do spark_bucketing.config_error(config_name, "column '" ~ name ~ "' is also in partition_by; every row of a partition has the same value there, so it cannot spread rows over buckets or order them",
            "remove '" ~ name ~ "' from " ~ config_name ~ " or from partition_by") -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- if resolved.partition_by | length >= columns | length -%}
    {%- do spark_bucketing.config_error('partition_by', "every column of the query is a partition column", "leave at least one column out of partition_by") -%}
  {%- endif -%}

  {%- if spec.bucket_hash == 'hive' -%}
    {%- set supported = spark_bucketing.hive_hash_types() -%}
    {%- for name in resolved.clustered_by -%}
      {%- set data_type = columns[name] | lower -%}
      {%- if data_type not in supported -%}
        {%- do spark_bucketing.config_error('clustered_by', "column '" ~ name ~ "' has type " ~ data_type
            ~ ", which Spark does not hash the way Hive does, so Hive and Trino would look for its rows in the wrong files (types Spark and Hive hash alike: "
            ~ (supported | join(', ')) ~ ")",
            "cast it in the model, e.g. cast(" ~ name ~ " as " ~ ('bigint' if data_type.startswith('decimal') else 'string') ~ ") as " ~ name
            ~ ", or set bucket_hash='spark' if only Spark reads this table") -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endif -%}

  {%- if spec.bucketing_version == 2 and not spark_bucketing.extension_loaded() -%}
    {%- do spark_bucketing.config_error('bucketing_version', "2 needs the spark-bucketing session extension, which this Spark session has not loaded:"
        ~ " Spark has no function for Hive's v2 hash, and its own writer would place the rows by v1",
        "load the extension: with method: session the package's Python plugin loads it unless SPARK_BUCKETING_EXTENSION=off;"
        ~ " elsewhere spark.sql.extensions=" ~ spark_bucketing.extension_class() ~ " and its jar (`spark-bucketing extension` prints the settings)."
        ~ " Or set bucketing_version=1") -%}
  {%- endif -%}

  {%- set out = spec.copy() -%}
  {%- do out.update(resolved) -%}
  {{ return(out) }}
{% endmacro %}
