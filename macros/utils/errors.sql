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
  {#- Fault injection for the tests: `--vars '{spark_bucketing_fail_at: <step>}'` stops the run here. -#}
  {%- if var('spark_bucketing_fail_at', none) == step -%}
    {%- do exceptions.raise_compiler_error("spark_bucketing: injected failure at step '" ~ step ~ "'") -%}
  {%- endif -%}
{% endmacro %}
