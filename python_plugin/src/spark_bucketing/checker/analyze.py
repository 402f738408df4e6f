"""Static analysis of a compiled query: every join, GROUP BY, DISTINCT and
window PARTITION BY, resolved through CTEs, subqueries, aliases and USING to
base relations, and judged by an engine model (engines.py).

The model tracks, per query block, the partitioning its output keeps: the
bucket columns of a bucketed scan while they pass through untouched, or the
keys of the last shuffle. A side needs no shuffle when that partitioning
already satisfies what the join or aggregation requires.
"""

from __future__ import annotations

from dataclasses import replace

import sqlglot
from sqlglot import exp
from sqlglot.optimizer.qualify import qualify
from sqlglot.optimizer.scope import Scope, build_scope

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.join_keys import equi_pairs, key_of
from spark_bucketing.checker.joins import JoinSide, SideChoice, coerced_sides, join_output, shuffle_choice
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.lookups import lookup_findings
from spark_bucketing.checker.model import ColId, Finding, Output, Part, Side
from spark_bucketing.checker.ordering import scan_order, sort_state
from spark_bucketing.checker.partitioning import prefixed, renamed_order, unordered
from spark_bucketing.checker.partitions_read import partitions_read, shared_spec
from spark_bucketing.checker.relations import Catalog, RelationInfo, normalize_name
from spark_bucketing.checker.suggestions import suggestions
from spark_bucketing.metadata import PartitionRecord


class Analyzer:
    def __init__(self, catalog: Catalog, settings: EngineSettings):
        self.catalog = catalog
        self.settings = settings
        self.findings: list[Finding] = []
        self._outputs: dict[int, Output] = {}

    # ---- FROM items -------------------------------------------------------

    def table_output(self, table: exp.Table, scope: Scope) -> Output:
        name = ".".join(p for p in (table.args.get("db") and table.db, table.name) if p)
        info = self.catalog.get(name)
        if info is None or info.unknown:
            reason = info.unknown if info else E.UNKNOWN_RELATION
            types = dict(info.columns) if info else {}
            return Output(
                relation=normalize_name(name),
                types=types,
                base={c: (info.name, c) for c in types},
                reasons=[reason],
                unknown=True,
            )
        types = dict(info.columns)
        base = {c: (info.name, c) for c in types}
        alias = table.alias_or_name
        read = partitions_read(info, alias, scope.expression)
        shared = None
        if info.bucket is None and info.partitions and self.settings.engine == "spark" and self.settings.extension:
            # The extension reads a table declared unbucketed by the spec its selected partitions share.
            shared = shared_spec(read)
        spec = info.bucket or shared
        key_types = [types.get(c.lower()) for c in spec.clustered_by] if spec else []
        ok, reasons = E.usable_spec(spec, key_types, self.settings, info.built_by_package)
        if shared is None:
            reasons = list(reasons) + _evolution_reasons(info, read)
        part = None
        if ok:
            part = Part(
                options=[tuple((alias, c.lower()) for c in spec.clustered_by)],
                num=spec.buckets,
                bucketed=True,
                spec=spec,
                sorted=scan_order(info, spec, read, alias),
                hash=spec.hash,
                scan=True,
            )
        return Output(relation=info.name, part=part, types=types, base=base, reasons=reasons, bucketed=ok)

    def scope_output(self, scope: Scope) -> Output:
        key = id(scope.expression)
        if key not in self._outputs:
            self._outputs[key] = self._compute_output(scope)
        return self._outputs[key]

    def _compute_output(self, scope: Scope) -> Output:
        node = scope.expression
        if isinstance(node, exp.SetOperation):
            branches = [self.scope_output(s) for s in scope.set_operation_scopes]
            first = branches[0] if branches else None
            types = dict(first.types) if first else {}
            notes = {c: [E.UNION] for c in types}
            base = {c: (None, c) for c in types}
            part = None
            if isinstance(node, exp.Union) and node.args.get("distinct"):
                # UNION (DISTINCT) is an aggregation on every column: a shuffle by all of them.
                cols = list(types)
                self.findings.append(
                    Finding(
                        "distinct",
                        source_line(node),
                        [Side(None, cols, False, True, [E.UNION], cols)],
                        ["a UNION loses bucketing: use UNION ALL where duplicates cannot occur"],
                    )
                )
                part = Part(options=[tuple(cols)], num=self.settings.shuffle_partitions, bucketed=False)
            return Output(
                part=part,
                types=types,
                base=base,
                notes=notes,
                reasons=[E.UNION],
                unknown=any(b.unknown for b in branches),
            )
        if not isinstance(node, exp.Select):
            return Output(reasons=[E.NOT_BUCKETED])
        return self.select_output(scope, node)

    # ---- a SELECT block ---------------------------------------------------

    def source_outputs(self, scope: Scope) -> dict[str, Output]:
        out = {}
        # sqlglot leaves the right side of a SEMI/ANTI join out of the selected sources.
        semi = {
            j.this.alias_or_name: j.this
            for j in scope.expression.args.get("joins") or []
            if (j.args.get("kind") or "").lower() in ("semi", "anti")
        }
        pairs = [(alias, source) for alias, (_node, source) in scope.selected_sources.items()]
        pairs += [(alias, scope.sources.get(alias, node)) for alias, node in semi.items()]
        for alias, source in pairs:
            if isinstance(source, Scope):
                out[alias] = self.scope_output(source)
            elif isinstance(source, exp.Table):
                out[alias] = self.table_output(source, scope)
        return out

    def select_output(self, scope: Scope, select: exp.Select) -> Output:
        sources = self.source_outputs(scope)
        from_expr = select.args.get("from_") or select.args.get("from")
        if from_expr is None:
            return Output(reasons=[E.NOT_BUCKETED])
        first_alias = from_expr.this.alias_or_name
        acc_aliases = [first_alias]
        first = sources.get(first_alias)
        part = prefixed(first.part, first_alias) if first else None
        unknown = bool(first and first.unknown)
        for join in select.args.get("joins") or []:
            right_alias = join.this.alias_or_name
            right = sources.get(right_alias)
            part, unk = self.judge_join(join, acc_aliases, right_alias, part, sources)
            unknown = unknown or unk or bool(right and right.unknown)
            acc_aliases.append(right_alias)
        where = select.args.get("where")
        if where is not None:
            part, unk = self.judge_subqueries(where.this, scope, acc_aliases, part, sources)
            unknown = unknown or unk

        group = select.args.get("group")
        windows = [w for w in select.find_all(exp.Window) if _in_block(w, select)]
        if part is not None and (group is not None or select.args.get("distinct") or windows):
            part = replace(part, scan=False)
        if group is not None and group.expressions:
            part = self.judge_grouping("aggregate", group, group.expressions, part, sources, select)
        elif select.args.get("distinct"):
            part = self.judge_grouping(
                "distinct", select, [p.unalias() for p in select.expressions], part, sources, select
            )
        for window in windows:
            if window.args.get("partition_by"):
                part = self.judge_grouping(
                    "window", window, window.args["partition_by"], part, sources, select, changes_partitioning=False
                )

        return self.project(select, sources, part, single=len(acc_aliases) == 1, unknown=unknown)

    def project(
        self, select: exp.Select, sources: dict[str, Output], part: Part | None, single: bool, unknown: bool
    ) -> Output:
        types: dict[str, str | None] = {}
        base: dict[str, tuple[str | None, str]] = {}
        notes: dict[str, list[str]] = {}
        rename: dict[ColId, str] = {}
        grouped = select.args.get("group") is not None
        only = next(iter(sources)) if len(sources) == 1 else None
        for proj in select.expressions:
            name = proj.alias_or_name.lower()
            inner = proj.unalias()
            if isinstance(inner, exp.Column) and (inner.table or only):
                cid = (inner.table or only, inner.name.lower())
                src = sources.get(inner.table)
                types[name] = src.types.get(cid[1]) if src else None
                base[name] = src.base.get(cid[1], (None, cid[1])) if src else (None, cid[1])
                if src and cid[1] in src.notes:
                    notes[name] = src.notes[cid[1]]
                rename.setdefault(cid, name)
            else:
                col = inner.find(exp.Column)
                src = sources.get(col.table or only) if col is not None else None
                if col is not None:
                    base[name] = src.base.get(col.name.lower(), (None, col.name)) if src else (None, col.name)
                if inner.find(exp.AggFunc) is not None or grouped:
                    notes[name] = [E.AGGREGATE]
                elif isinstance(inner, exp.Cast):
                    notes[name] = [E.KEY_CAST]
                else:
                    notes[name] = [E.KEY_EXPRESSION]
                types[name] = inner.to.sql("spark").lower() if isinstance(inner, exp.Cast) else None
        out_part = None
        reasons: list[str] = []
        if part is not None:
            options = [tuple(rename[c] for c in opt) for opt in part.options if all(c in rename for c in opt)]
            if options:
                out_part = replace(part, options=options, sorted=renamed_order(part.sorted, rename))
        relation = None
        if single and len(sources) == 1:
            only = next(iter(sources.values()))
            relation = only.relation
            reasons = list(only.reasons)
        if out_part is None and not reasons:
            reasons = [E.NOT_BUCKETED]
        return Output(
            relation=relation,
            part=out_part,
            types=types,
            base=base,
            notes=notes,
            reasons=reasons,
            bucketed=bool(out_part and out_part.bucketed),
            unknown=unknown,
        )

    # ---- joins --------------------------------------------------------------

    def judge_join(
        self,
        join: exp.Join,
        left_aliases: list[str],
        right_alias: str,
        left_part: Part | None,
        sources: dict[str, Output],
    ) -> tuple[Part | None, bool]:
        pairs = equi_pairs(join.args.get("on"), set(left_aliases), right_alias)
        kind = (join.args.get("kind") or "").lower()
        if kind not in ("semi", "anti"):
            kind = (join.args.get("side") or kind or "inner").lower()
        if sources.get(right_alias) is None or not pairs:
            return None, False  # a cross join or a non-equi join: not a shuffle question
        return self.judge_pairs(pairs, kind, source_line(join), left_aliases, right_alias, left_part, sources)

    def judge_subqueries(
        self, where: exp.Expression, scope: Scope, left_aliases: list[str], part: Part | None, sources: dict
    ) -> tuple[Part | None, bool]:
        """`IN (subquery)` and `[NOT] EXISTS (subquery)` in a WHERE clause:
        Spark plans them as left semi or anti joins on the keys they compare
        (a correlated EXISTS on its equalities with the outer block). `NOT
        IN` is a null-aware anti join, which Spark always broadcasts."""
        unknown = False
        only = left_aliases[0] if len(left_aliases) == 1 else None
        conjuncts = where.flatten() if isinstance(where, exp.And) else [where]
        for n, pred in enumerate(conjuncts):
            negated = isinstance(pred, exp.Not)
            inner = pred.this if negated else pred
            if isinstance(inner, exp.In) and isinstance(inner.args.get("query"), exp.Subquery):
                sub = inner.args["query"].this
                sub_scope = _scope_of(scope, sub)
                if sub_scope is None or not isinstance(sub, exp.Select) or len(sub.expressions) != 1:
                    continue
                alias = f"__sb_subquery_{n}"
                right = self.scope_output(sub_scope)
                pairs = [(key_of(inner.this, only), (alias, sub.expressions[0].alias_or_name.lower()))]
                if negated:
                    self.null_aware_anti_join(inner, pairs, left_aliases, alias, {**sources, alias: right})
                    continue
                kind = "semi"
            elif isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Select):
                sub = inner.this
                sub_scope = _scope_of(scope, sub)
                from_expr = sub.args.get("from_") or sub.args.get("from")
                if sub_scope is None or from_expr is None or sub.args.get("joins") or sub.args.get("where") is None:
                    continue
                alias = from_expr.this.alias_or_name
                right = self.source_outputs(sub_scope).get(alias)
                if right is None or alias in left_aliases:
                    continue
                pairs = equi_pairs(sub.args["where"].this, set(left_aliases), alias)
                if not pairs:
                    continue
                kind = "anti" if negated else "semi"
            else:
                continue
            new_part, unk = self.judge_pairs(
                pairs, kind, source_line(inner), left_aliases, alias, part, {**sources, alias: right}
            )
            part = new_part
            unknown = unknown or unk or right.unknown
        return part, unknown

    def null_aware_anti_join(self, node, pairs, left_aliases, alias, sources) -> None:
        left = self.side_description(left_aliases, [pairs[0][0]], sources)
        right = self.side_description([alias], [pairs[0][1]], sources)
        sides = [
            Side(left["relation"], left["keys"], False, False, [], left["local"]),
            Side(right["relation"], right["keys"], False, False, [], right["local"]),
        ]
        finding = Finding(
            "join", source_line(node), sides, join_type="anti (null-aware)", unknown=left["unknown"] or right["unknown"]
        )
        finding.suggestions = [
            "NOT IN (subquery) runs as a null-aware anti join that broadcasts every row of the subquery: "
            "where the key cannot be NULL, write NOT EXISTS (a sort-merge anti join that can use the buckets)"
        ]
        self.findings.append(finding)

    def judge_pairs(
        self,
        pairs: list[tuple],
        kind: str,
        line: int,
        left_aliases: list[str],
        right_alias: str,
        left_part: Part | None,
        sources: dict[str, Output],
    ) -> tuple[Part | None, bool]:
        """Judges one join of the sources at `left_aliases` with the one at
        `right_alias` on `pairs` of keys; returns the join's output
        partitioning and whether a side is unknown."""
        right_part = prefixed(sources[right_alias].part, right_alias)
        l_keys, r_keys = [lk for lk, _ in pairs], [rk for _, rk in pairs]
        left = JoinSide(left_part, l_keys, self.side_description(left_aliases, l_keys, sources))
        right = JoinSide(right_part, r_keys, self.side_description([right_alias], r_keys, sources))
        left.type_ok, right.type_ok = coerced_sides(l_keys, r_keys, sources, self.settings.ansi)
        unknown = left.desc["unknown"] or right.desc["unknown"]
        choice = shuffle_choice(left, right, self.settings)

        finding = Finding("join", line, [self.side(left, choice.left, right), self.side(right, choice.right, left)])
        finding.join_type, finding.unknown = kind, unknown
        finding.suggestions = suggestions(finding, self.settings, left_part, right_part)
        self.findings.append(finding)
        return join_output(kind, left, right, choice), unknown

    def side(self, s: JoinSide, shuffled: SideChoice, other: JoinSide) -> Side:
        reasons = [] if not shuffled.shuffle else self.why(s.part, s.keys, s.plain, s.type_ok, s.desc) + shuffled.extra
        plain_join = s.plain and other.plain
        return Side(
            relation=s.desc["relation"],
            keys=s.desc["keys"],
            bucketed=bool(s.part and s.part.bucketed),
            shuffle=shuffled.shuffle,
            reasons=_dedupe(reasons),
            local_keys=s.desc["local"],
            sort=sort_state(s.part, s.keys, shuffled.shuffle, self.settings.sorted_scan_output) if plain_join else None,
        )

    def side_description(self, aliases: list[str], keys: list, sources: dict[str, Output]) -> dict:
        names, relations, notes, unknown = [], set(), [], False
        for k in keys:
            if isinstance(k, tuple):
                src = sources.get(k[0])
                rel, col = src.base.get(k[1], (src.relation, k[1])) if src else (None, k[1])
                if src is not None:
                    if rel is None:
                        rel = src.relation
                    notes += src.notes.get(k[1], [])
                    unknown = unknown or src.unknown
                    if k[1] not in src.types and src.types and not src.unknown:
                        notes.append(E.UNKNOWN_COLUMN)
                        unknown = True
                relations.add(rel)
                names.append(col)
            else:
                names.append(k.sql("spark"))
                notes.append(E.KEY_CAST if isinstance(k, exp.Cast) else E.KEY_EXPRESSION)
                for c in k.find_all(exp.Column):
                    src = sources.get(c.table)
                    if src is not None:
                        relations.add(src.base.get(c.name.lower(), (src.relation, c.name))[0] or src.relation)
                        unknown = unknown or src.unknown
        if len(aliases) == 1:
            src = sources.get(aliases[0])
            if src is not None:
                notes = list(src.reasons) + notes
                unknown = unknown or src.unknown
        relation = relations.pop() if len(relations) == 1 else None
        local = [
            k[1] if isinstance(k, tuple) else ",".join(sorted({c.name.lower() for c in k.find_all(exp.Column)}))
            for k in keys
        ]
        return {"relation": relation, "keys": names, "notes": notes, "unknown": unknown, "local": local}

    def why(self, part: Part | None, keys: list, plain: bool, type_ok: bool, desc: dict) -> list[str]:
        reasons = []
        if not plain:
            reasons += [n for n in desc["notes"] if n in (E.KEY_CAST, E.KEY_EXPRESSION)] or [E.KEY_EXPRESSION]
        if not type_ok:
            reasons.append(E.KEY_TYPE_MISMATCH)
        key_notes = [n for n in desc["notes"] if n in (E.KEY_CAST, E.KEY_EXPRESSION, E.UNION, E.AGGREGATE)]
        if part is None:
            reasons += (
                key_notes or [n for n in desc["notes"] if n not in (E.KEY_CAST, E.KEY_EXPRESSION)] or [E.NOT_BUCKETED]
            )
        elif plain and type_ok:
            opt = part.options[0]
            ks = set(keys)
            if ks > set(opt) and self.settings.require_all_cluster_keys:
                reasons.append(E.KEYS_SUPERSET)
            elif not set(opt) <= ks:
                reasons.append(E.KEYS_NOT_BUCKET_COLUMNS)
            if not part.bucketed:
                reasons.append(E.JOIN_OUTPUT)
        if desc["unknown"]:
            known = [n for n in (E.UNKNOWN_RELATION, E.UNKNOWN_BUCKETING) if n in desc["notes"]]
            reasons += known or [E.UNKNOWN_COLUMN]
        return list(dict.fromkeys(reasons))

    # ---- GROUP BY / DISTINCT / window --------------------------------------

    def judge_grouping(
        self,
        kind: str,
        node: exp.Expression,
        exprs: list[exp.Expression],
        part: Part | None,
        sources: dict[str, Output],
        select: exp.Select,
        changes_partitioning: bool = True,
    ) -> Part | None:
        only = next(iter(sources)) if len(sources) == 1 else None
        keys = [key_of(e, only) for e in exprs]
        plain = [k for k in keys if isinstance(k, tuple)]
        ok = part is not None and any(set(opt) <= set(plain) for opt in part.options)
        aliases = sorted({k[0] for k in plain}) or list(sources)
        desc = self.side_description(aliases, keys, sources)
        reasons: list[str] = []
        if not ok:
            if part is None:
                reasons = [n for n in desc["notes"] if n not in (E.KEY_CAST, E.KEY_EXPRESSION)] or [E.NOT_BUCKETED]
            else:
                reasons = [E.KEYS_NOT_BUCKET_COLUMNS]
            if len(plain) < len(keys):
                reasons.append(E.KEY_EXPRESSION)
        side = Side(
            desc["relation"], desc["keys"], bool(part and part.bucketed), not ok, _dedupe(reasons), desc["local"]
        )
        finding = Finding(kind, source_line(node if kind != "distinct" else select), [side], unknown=desc["unknown"])
        finding.suggestions = suggestions(finding, self.settings, part, None)
        self.findings.append(finding)
        if ok or not changes_partitioning:
            return unordered(part)
        if len(plain) != len(keys):
            return None
        return Part(options=[tuple(plain)], num=self.settings.shuffle_partitions, bucketed=False)


# ---- helpers ------------------------------------------------------------------


def _in_block(node: exp.Expression, select: exp.Select) -> bool:
    parent = node.parent
    while parent is not None and not isinstance(parent, exp.Select):
        parent = parent.parent
    return parent is select


def _dedupe(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def _scope_of(scope: Scope, select: exp.Expression) -> Scope | None:
    return next((s for s in scope.subquery_scopes if s.expression is select), None)


# ---- entry point -----------------------------------------------------------------


def analyze_sql(sql: str, catalog: Catalog, settings: EngineSettings | None = None) -> list[Finding]:
    """Findings for one compiled query, in query order."""
    settings = settings or EngineSettings()
    try:
        parsed = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError as err:
        line = (err.errors[0].get("line") if err.errors else None) or 1
        return [
            Finding(
                "query",
                int(line),
                [],
                [f"could not parse the compiled SQL: {err.errors[0]['description'] if err.errors else err}"],
                unknown=True,
            )
        ]
    try:
        qualified = qualify(
            parsed.copy(),
            dialect="spark",
            schema=catalog.sqlglot_schema(),
            validate_qualify_columns=False,
            identify=False,
        )
    except Exception:  # sqlglot raises several kinds on SQL it cannot resolve with the schema
        try:
            qualified = qualify(parsed, dialect="spark", validate_qualify_columns=False, identify=False)
        except Exception as err:
            return [Finding("query", 1, [], [f"could not resolve the query's columns: {err}"], unknown=True)]
    root = build_scope(qualified)
    if root is None:
        return []
    analyzer = Analyzer(catalog, settings)
    analyzer.scope_output(root)
    for scope in root.traverse():  # blocks no other block reads (e.g. scalar subqueries)
        analyzer.scope_output(scope)
    findings = analyzer.findings + lookup_findings(root, catalog, settings)
    unknown_rel = [f for f in findings if f.unknown]
    for f in unknown_rel:
        if not any("not in the catalog" in s for s in f.suggestions):
            f.suggestions.append("a relation or column is unknown to the catalog; the verdict is a guess")
    findings.sort(key=lambda f: f.line)
    return findings


def _evolution_reasons(info: RelationInfo, read: list[PartitionRecord]) -> list[str]:
    """Why an evolving table is read unbucketed: the partitions `read` disagree, or the declaration does."""
    if not info.evolving:
        return []
    return [E.MIXED_PARTITION_SPECS] if len({p.spec.key() for p in read}) > 1 else [E.EVOLVING_TABLE]
