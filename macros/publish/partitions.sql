{#- Publishing partitions into an existing table: write them under the
    table's folder in _bucketing/<run> (write_partitions), verify them,
    switch the table's partitions to them and record them, then declare the
    spec the partitions agree on. Reads only the partitions it writes. -#}

{% macro replacement_scope(rels, spec, replaced_partitions, extension, listed) %}
  {#- What a write replaces, from the catalog: {'listed': the written
      partitions, {path: values}, 'catalog': the paths of the table's
      partitions (a set), 'emptied': {path: values} of replaced partitions
      (static partitions, a merge's scope) the new rows left empty,
      'batched': whether the switch goes through the session extension
      (`extension`: it is active; it reports the folders it replaces),
      'other': a files_sql of the replaced partitions whose folders are
      wanted (all of them, or with 'batched' the emptied ones), or none}.
      Nothing here takes a Jinja step per partition of the table: a table of
      10,000 partitions pays seconds for each. -#}
  {%- set catalog = spark_bucketing.catalog_paths(rels.target) -%}
  {%- set to_replace = spark_bucketing.static_values(spec, replaced_partitions) -%}
  {%- set emptied = {} -%}
  {#- Only static partitions (and a merge's scope) are replaced without new
      rows: with none, the table's other partitions are not looked at. -#}
  {%- if to_replace -%}
    {%- for path, values in spark_bucketing.paths_values(catalog | reject('in', listed) | sort).items()
        if spark_bucketing.values_in(values, to_replace, spec.partition_by) -%}
      {%- do emptied.update({path: values}) -%}
    {%- endfor -%}
  {%- endif -%}
  {%- set switched = catalog | select('in', listed) | sort -%}
  {%- set batched = switched | length > 0 and extension -%}
  {%- set old_values = (emptied.values() | list) + ([] if batched else spark_bucketing.paths_values(switched).values() | list) -%}
  {{ return({'listed': listed, 'catalog': catalog, 'emptied': emptied, 'batched': batched,
             'other': spark_bucketing.files_sql(rels.target, spec.partition_by, old_values) if old_values else none}) }}
{% endmacro %}

{% macro write_partitions(rels, spec, columns, plan, location, extension) %}
  {#- Writes the plan's rows under `location`: into a bucketed folder with
      no catalog entry where the session extension can (writes_folders,
      write_bucketed_folder), else through the side table rels.incr.
      Returns what was written: {'relation': the side table or none,
      'folder': the folder's description or none}. -#}
  {%- if spark_bucketing.writes_folders(spec, extension) -%}
    {%- set folder = spark_bucketing.write_bucketed_folder(spec, columns, plan.content, location, plan.bucketed_rows) -%}
    {{ return({'relation': none, 'folder': folder}) }}
  {%- endif -%}
  {%- do spark_bucketing.build_bucketed_relation(rels.incr, spec, columns, plan.content, location, plan.bucketed_rows) -%}
  {{ return({'relation': rels.incr, 'folder': none}) }}
{% endmacro %}

{% macro verify_partitions(rels, spec, location, written, plan, extension) %}
  {#- Every check of the written partitions before anything is published,
      and what they replace: {'stats': the written partitions, 'scope':
      replacement_scope, 'replaced': {path: stats of the folder it
      replaces}}. A side table's partitions come from its catalog, and the
      replaced partitions' folders are listed by the check's query. A
      bucketed folder's partitions are those the check finds (its listing
      and footers, no Spark job); the replaced folders the switch does not
      report (emptied partitions) are listed by a query of their own. -#}
  {%- if written.folder is not none -%}
    {%- set checked = spark_bucketing.verify_write(written, spec, location, rels) -%}
    {%- set listed = {} -%}
    {%- for s in checked.stats -%}{%- do listed.update({s.path: s['values']}) -%}{%- endfor -%}
    {%- set scope = spark_bucketing.replacement_scope(rels, spec, plan.replaced_partitions, extension, listed) -%}
    {%- do spark_bucketing.check_side_partitions(written, rels, location, checked.stats, none) -%}
    {%- set other = spark_bucketing.folder_stats(run_query(spark_bucketing.with_folders_sql(scope.other, spec.partition_by | length)), spec.partition_by)
        if scope.other is not none else [] -%}
  {%- else -%}
    {%- set scope = spark_bucketing.replacement_scope(rels, spec, plan.replaced_partitions, extension, spark_bucketing.catalog_partitions(written.relation)) -%}
    {%- set checked = spark_bucketing.verify_write(written, spec, location, rels, scope.other) -%}
    {%- do spark_bucketing.check_side_partitions(written, rels, location, checked.stats, scope.listed) -%}
    {%- set other = checked.other -%}
  {%- endif -%}
  {%- if plan.accounting is not none -%}
    {%- do spark_bucketing.check_row_accounting(written, location, rels, spec.partition_by, checked.stats, plan.accounting) -%}
  {%- endif -%}
  {%- set replaced = {} -%}
  {%- for s in other -%}{%- do replaced.update({s.path: s}) -%}{%- endfor -%}
  {{ return({'stats': checked.stats, 'scope': scope, 'replaced': replaced}) }}
{% endmacro %}

{% macro undeclare_other_spec(rels, info, spec) %}
  {#- Never lets the catalog declare a spec the new partitions would break:
      a table declaring another spec is declared unbucketed first. Returns
      the spec the table declares now (a record or none). -#}
  {%- set declared = spark_bucketing.declared_spec(info) -%}
  {%- if declared is not none and not spark_bucketing.same_spec(declared, spark_bucketing.spec_record(spec)) -%}
    {%- do spark_bucketing.redeclare(rels, rels.target, none, spec) -%}
    {{ return(none) }}
  {%- endif -%}
  {{ return(declared) }}
{% endmacro %}

{% macro published_state(meta, scope, stats, written_props, declared) %}
  {#- What converge needs after a publish: {'records': {path: record or none}
      of every listed partition, 'unlisted_keys': metadata keys of partitions
      no longer listed, 'declared': the declared spec, 'written': paths
      written}. Built by filters, not a Jinja step per partition. -#}
  {%- set records = dict(meta.partitions.items() | selectattr('0', 'in', scope.catalog) | rejectattr('0', 'in', scope.emptied)) -%}
  {%- set unlisted_keys = meta['keys'].items() | rejectattr('0', 'in', records) | map(attribute='1') | list -%}
  {%- set unrecorded = scope.catalog | reject('in', records) | reject('in', scope.emptied) | sort -%}
  {%- do records.update(zip(unrecorded, [none] * (unrecorded | length))) -%}
  {%- for s in stats -%}{%- do records.update({s.path: fromjson(written_props[spark_bucketing.partition_key(s.path)])}) -%}{%- endfor -%}
  {{ return({'records': records, 'unlisted_keys': unlisted_keys | reject('in', written_props) | list,
             'declared': declared, 'written': stats | map(attribute='path') | list}) }}
{% endmacro %}

{% macro equal_spec_fields(records) %}
  {#- Whether all `records` hold the same hash, buckets, clustered_by and
      sorted_by, compared by filters: on a table of 10,000 partitions that
      agree (the common case) a Jinja step per record costs most of a second. -#}
  {%- for field in ['hash', 'buckets'] -%}
    {%- if records | map(attribute=field, default='(missing)') | unique(case_sensitive=true) | list | length > 1 -%}{{ return(false) }}{%- endif -%}
  {%- endfor -%}
  {#- Column lists by their repr: one string per list, distinct for distinct lists of names. -#}
  {%- for field in ['clustered_by', 'sorted_by'] -%}
    {%- if records | map(attribute=field, default='(missing)') | map('string') | unique(case_sensitive=true) | list | length > 1 -%}{{ return(false) }}{%- endif -%}
  {%- endfor -%}
  {{ return(true) }}
{% endmacro %}

{% macro converge(rels, spec, published) %}
  {#- Drops the records of partitions the catalog no longer lists, and
      declares the bucket spec every listed partition's record agrees on, or
      none while they differ (or one has no record). Decided from the
      metadata and the catalog's list; only a change to a bucketed
      declaration reads the other partitions (verified_spec). -#}
  {%- do spark_bucketing.unset_properties(rels.target, published.unlisted_keys) -%}
  {%- if published.records is none -%}
    {#- Format 2: the spec counts decided it. -#}
    {%- set common = namespace(spec=published.common) -%}
  {%- else -%}
    {%- set records = published.records.values() | list -%}
    {%- set common = namespace(spec=spark_bucketing.spec_record(spec) if records | length == 0 else records[0]) -%}
    {%- if none in records or not spark_bucketing.equal_spec_fields(records) -%}
      {%- for rec in records if common.spec is not none -%}
        {#- Equal fields are the same spec: same_spec (a macro call) only for the rest. -#}
        {%- if rec is none or not (rec.hash == common.spec.hash and rec.buckets == common.spec.buckets
            and rec.clustered_by == common.spec.clustered_by and rec.sorted_by == common.spec.sorted_by
            or spark_bucketing.same_spec(rec, common.spec)) -%}{%- set common.spec = none -%}{%- endif -%}
      {%- endfor -%}
    {%- endif -%}
  {%- endif -%}
  {%- if not spark_bucketing.same_spec(published.declared, common.spec) -%}
    {%- set stats = none if common.spec is none else spark_bucketing.partition_stats(rels.target, spec.partition_by) -%}
    {%- set target_spec = common.spec if common.spec is none
        else spark_bucketing.verified_spec(rels.target, stats, common.spec, published) -%}
    {%- if not spark_bucketing.same_spec(published.declared, target_spec) -%}
      {%- do spark_bucketing.redeclare(rels, rels.target, target_spec, spec, stats) -%}
    {%- endif -%}
  {%- endif -%}
{% endmacro %}

{% macro publish_partitions(rels, info, meta, spec, columns, plan, extension) %}
  {#- `plan`: a strategy's plan (strategies/); `extension`: whether the
      session extension is active (extension_active). Returns {'obsolete': the
      replaced folders inside the table's folder, for the caller to delete
      once everything is published}. -#}
  {%- set location = info.location.rstrip('/') ~ '/_bucketing/' ~ invocation_id -%}
  {%- set written = spark_bucketing.write_partitions(rels, spec, columns, plan, location, extension) -%}
  {%- set checked = spark_bucketing.verify_partitions(rels, spec, location, written, plan, extension) -%}
  {%- set scope = checked.scope -%}
  {%- do spark_bucketing.checkpoint('after_write') -%}
  {%- set declared = spark_bucketing.undeclare_other_spec(rels, info, spec) -%}
  {%- do spark_bucketing.checkpoint('before_switch') -%}
  {%- if spark_bucketing.records_format(spec) == '2' -%}
    {%- set switched = spark_bucketing.switch_and_record(rels, meta, spec, checked.stats, scope, plan.accounting) -%}
    {%- set left = switched.left -%}
    {%- set published = {'records': none, 'common': spark_bucketing.common_spec(switched.counts) if switched.counts else spark_bucketing.spec_record(spec),
                         'unlisted_keys': [], 'declared': declared, 'written': checked.stats | map(attribute='path') | list} -%}
  {%- else -%}
    {%- if meta.version == '2' -%}
      {#- Back to format 1: every record into the table's properties first. -#}
      {%- set meta = spark_bucketing.read_metadata(rels.target) -%}
      {%- do spark_bucketing.records_to_properties(rels.target, meta.partitions) -%}
    {%- endif -%}
    {%- set written_props = spark_bucketing.metadata_properties(spec, checked.stats, plan.accounting) -%}
    {%- if extension -%}
      {%- set left = spark_bucketing.switch_in_one_statement(rels.target, checked.stats, scope.catalog, scope.emptied, written_props) -%}
    {%- else -%}
      {%- set left = spark_bucketing.switch_partitions(rels.target, checked.stats, scope.catalog) -%}
      {%- do spark_bucketing.set_properties(rels.target, written_props) -%}
      {%- do spark_bucketing.drop_partitions(rels.target, scope.emptied) -%}
    {%- endif -%}
    {%- set published = spark_bucketing.published_state(meta, scope, checked.stats, written_props, declared) -%}
  {%- endif -%}
  {%- if written.relation is not none -%}{%- do adapter.drop_relation(written.relation) -%}{%- endif -%}
  {%- do spark_bucketing.checkpoint('before_cleanup') -%}
  {%- do spark_bucketing.converge(rels, spec, published) -%}
  {%- set obsolete = [] -%}
  {%- for folder in (left or []) + (checked.replaced.values() | map(attribute='location') | list)
      if folder and spark_bucketing.is_under(folder, info.location) -%}
    {%- do obsolete.append(folder) -%}
  {%- endfor -%}
  {{ return({'obsolete': obsolete}) }}
{% endmacro %}
