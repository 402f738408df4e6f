{#- Failing a run: a config error names the model, the config, the problem
    and the fix; checkpoints let the tests stop a run between two steps. -#}

{% macro config_error(config_name, problem, fix) %}
  {%- do exceptions.raise_compiler_error(
      "spark_bucketing: model '" ~ model.unique_id ~ "', config '" ~ config_name ~ "': "
      ~ problem ~ ". Fix: " ~ fix ~ ".") -%}
{% endmacro %}

{% macro model_error(message) %}
  {%- do exceptions.raise_compiler_error("spark_bucketing: model '" ~ model.unique_id ~ "': " ~ message) -%}
{% endmacro %}

{% macro checkpoint(step) %}
  {#- Fault injection for the tests: `--vars '{spark_bucketing_fail_at: <step>}'`
      or the environment variable SPARK_BUCKETING_FAIL_AT=<step> stops the run
      here. The variable is read only while the run executes, so a change of
      it does not make dbt parse the whole project again, as a change of
      --vars does. -#}
  {%- if spark_bucketing.injected_failure(step) -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: injected failure at step '" ~ step ~ "'") -%}
  {%- endif -%}
{% endmacro %}

{% macro injected_failure(step) %}
  {#- Whether the tests asked the run to stop at `step` (checkpoint); for a
      step inside one of the extension's statements, the statement is asked. -#}
  {{ return((var('spark_bucketing_fail_at', none) or env_var('SPARK_BUCKETING_FAIL_AT', '')) == step) }}
{% endmacro %}
