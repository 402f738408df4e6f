{#- The settings of concurrent runs, read where they are used and checked
    by validate_concurrency_configs before anything is written. -#}

{% macro seconds_config(config_name, default) %}
  {#- A config in whole seconds (>= 0). -#}
  {%- set raw = config.get(config_name, default) -%}
  {%- if raw is not number or raw < 0 or raw != raw | int -%}
    {%- do spark_bucketing.config_error(config_name, "expected a whole number of seconds (0 or more), got " ~ raw,
        "write e.g. " ~ config_name ~ "=" ~ default) -%}
  {%- endif -%}
  {{ return(raw | int) }}
{% endmacro %}

{% macro commit_lock_wait() %}
  {#- How long a run waits for another run's commit to the same table. -#}
  {{ return(spark_bucketing.seconds_config('commit_lock_wait', 3600)) }}
{% endmacro %}

{% macro commit_lock_expiry() %}
  {#- After how long a lock is taken for a dead run's (one killed in its commit). -#}
  {{ return(spark_bucketing.seconds_config('commit_lock_expiry', 600)) }}
{% endmacro %}

{% macro leftover_grace_period() %}
  {#- How long a run's side entries and folders are taken for a live run's. -#}
  {{ return(spark_bucketing.seconds_config('leftover_grace_period', 86400)) }}
{% endmacro %}

{% macro replaced_folders_retention() %}
  {#- How long a partition's replaced folder is kept after the switch, for
      the queries that listed it before (readers, other runs). -#}
  {{ return(spark_bucketing.seconds_config('replaced_folders_retention', 3600)) }}
{% endmacro %}

{% macro validate_concurrency_configs() %}
  {#- Each concurrency setting's shape, before anything is written (seconds_config fails on a bad one). -#}
  {%- do spark_bucketing.commit_lock_wait() -%}
  {%- do spark_bucketing.commit_lock_expiry() -%}
  {%- do spark_bucketing.leftover_grace_period() -%}
  {%- do spark_bucketing.replaced_folders_retention() -%}
{% endmacro %}

{% macro epoch_now() %}
  {#- Seconds since 1970 (UTC), from this process's clock. -#}
  {{ return((modules.datetime.datetime.utcnow() - modules.datetime.datetime(1970, 1, 1)).total_seconds() | int) }}
{% endmacro %}

{% macro sleep_seconds(seconds) %}
  {#- Waits: Jinja cannot sleep, the JVM can. -#}
  {%- do run_query("select reflect('java.lang.Thread', 'sleep', cast(" ~ (seconds * 1000) | int ~ " as bigint))") -%}
{% endmacro %}
