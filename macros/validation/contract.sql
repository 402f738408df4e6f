{#- Model contracts (contract: {enforced: true}), as dbt-spark checks them,
    on every run of both materializations and before anything is written:
    dbt's own check of the query's column names and types against the
    contract, with dbt's error. The not_null and check constraints are
    enforced on every row the run writes. -#}

{% macro contract_sql(sql) %}
  {#- The model's rows under its contract: `sql` when none is enforced; else
      dbt's check (get_assert_columns_equivalent: two schema queries, no
      rows read), then the rows in the contract's column order, a row that
      breaks a not_null or check constraint failing the write (before
      anything is published: the old table or partitions stay whole). -#}
  {%- if not spark_bucketing.contract_enforced() -%}{{ return(sql) }}{%- endif -%}
  {%- do get_assert_columns_equivalent(sql) -%}
  {%- set ordered = get_select_subquery(sql) -%}
  {%- set checks = spark_bucketing.constraint_checks() -%}
  {%- if not checks -%}{{ return(ordered) }}{%- endif -%}
  {%- set checked -%}
    select * from ({{ ordered }}) as __sb_contract
    where case
    {%- for broken, what in checks %}
      when {{ broken }} then raise_error({{ spark_bucketing.sql_string("spark_bucketing: model " ~ model.unique_id ~ ": a row breaks " ~ what ~ "; nothing was published") }})
    {%- endfor %}
      else true end
  {%- endset -%}
  {{ return(checked) }}
{% endmacro %}

{% macro constraint_checks() %}
  {#- [(condition true for a row that breaks a constraint, the constraint
      in words)] of the model's not_null and check constraints (column and
      model level). Spark enforces no other kind on these tables: those
      are declared only, and dbt's warning says so (warn_unenforced). -#}
  {%- set out = [] -%}
  {%- set unenforced = [] -%}
  {%- for name, column in model.columns.items() -%}
    {%- set quoted = adapter.quote(name) if column.get('quote') else spark_bucketing.quoted([name])[0] -%}
    {%- for c in column.get('constraints', []) -%}
      {%- if c.type == 'not_null' -%}
        {%- do out.append((quoted ~ ' is null', "the not_null constraint on column " ~ name)) -%}
      {%- elif c.type == 'check' -%}
        {%- do out.append(('not coalesce((' ~ c.expression ~ '), true)', "the check constraint " ~ ((c.name ~ " ") if c.name else "") ~ "(" ~ c.expression ~ ") on column " ~ name)) -%}
      {%- elif c.get('warn_unenforced', true) -%}
        {%- do unenforced.append(c.type ~ ' on column ' ~ name) -%}
      {%- endif -%}
    {%- endfor -%}
  {%- endfor -%}
  {%- for c in model.get('constraints', []) -%}
    {%- if c.type == 'not_null' -%}
      {%- for name in c.get('columns') or [] -%}
        {%- do out.append((spark_bucketing.quoted([name])[0] ~ ' is null', "the not_null constraint on column " ~ name)) -%}
      {%- endfor -%}
    {%- elif c.type == 'check' -%}
      {%- do out.append(('not coalesce((' ~ c.expression ~ '), true)', "the check constraint " ~ ((c.name ~ " ") if c.name else "") ~ "(" ~ c.expression ~ ")")) -%}
    {%- elif c.get('warn_unenforced', true) -%}
      {%- do unenforced.append(c.type ~ ' on ' ~ (c.get('columns') or []) | join(', ')) -%}
    {%- endif -%}
  {%- endfor -%}
  {%- if unenforced -%}
    {%- do exceptions.warn("spark_bucketing: model '" ~ model.unique_id ~ "': the constraints " ~ (unenforced | join('; '))
        ~ " are not enforced (Spark checks none on Parquet or ORC tables; not_null and check are enforced by this package)") -%}
  {%- endif -%}
  {{ return(out) }}
{% endmacro %}

{% macro contract_enforced() %}
  {%- set contract = config.get('contract') -%}
  {{ return(contract is not none and contract.enforced) }}
{% endmacro %}
