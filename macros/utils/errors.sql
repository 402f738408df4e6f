{#- Failing a run: a config error names the model, the config, the problem
    and the fix; checkpoints let the tests stop a run between two steps. -#}

{% macro config_error(config_name, problem, fix) %}
  {%- do exceptions.raise_compiler_error(
      "spark_bucketing: model '" ~ model.unique_id ~ "', config '" ~ config_name ~ "': "
      ~ problem ~ ". Fix: " ~ fix ~ ".") -%}
{% endmacro %}

{% macro model_error(message) %}
  {%- do spark_bucketing.release_held_lock() -%}
  {%- do exceptions.raise_compiler_error("spark_bucketing: model '" ~ model.unique_id ~ "': " ~ message) -%}
{% endmacro %}

{% macro release_held_lock() %}
  {#- A run that fails on purpose (an error of the package's, an injected
      failure) while it holds its table's commit lock (steps/lock.sql)
      releases it first, so the runs waiting for it go on. A statement that
      fails in the commit leaves the entry until commit_lock_expiry. -#}
  {%- set held = model.get('spark_bucketing_lock_entry') -%}
  {%- if held -%}
    {%- call statement('spark_bucketing_lock') -%}drop view if exists {{ held }}{%- endcall -%}
    {%- do model.pop('spark_bucketing_lock_entry') -%}
  {%- endif -%}
{% endmacro %}

{% macro checkpoint(step) %}
  {#- Fault injection for the tests: `--vars '{spark_bucketing_fail_at: <step>}'`
      or the environment variable SPARK_BUCKETING_FAIL_AT=<step> stops the run
      here. The variable is read only while the run executes, so a change of
      it does not make dbt parse the whole project again, as a change of
      --vars does. -#}
  {%- if spark_bucketing.injected_failure(step) -%}
    {%- do spark_bucketing.release_held_lock() -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: injected failure at step '" ~ step ~ "'") -%}
  {%- endif -%}
{% endmacro %}

{% macro injected_failure(step) %}
  {#- Whether the tests asked the run to stop at `step` (checkpoint); for a
      step inside one of the extension's statements, the statement is asked. -#}
  {{ return((var('spark_bucketing_fail_at', none) or env_var('SPARK_BUCKETING_FAIL_AT', '')) == step) }}
{% endmacro %}
