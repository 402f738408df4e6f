"""Pass 2: joins and groupings. The partitioning flows from the scans (pass
1) through each block's joins, IN/EXISTS subqueries, groupings and
projection to the blocks that read it; every join and grouping on the way is
judged (joins.py, groupings.py) and becomes a finding.

The model tracks, per block, the partitioning its output keeps: the bucket
columns of a bucketed scan while they pass through untouched, or the keys of
the last shuffle. A side needs no shuffle when that partitioning already
satisfies what the join or aggregation requires."""

from __future__ import annotations

from dataclasses import replace

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.blocks import Block, Query
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.groupings import block_groupings, block_windows, judge_grouping
from spark_bucketing.checker.join_keys import equi_pairs, key_of
from spark_bucketing.checker.joins import JoinSide, SideChoice, coerced_sides, join_output, shuffle_choice
from spark_bucketing.checker.keys import dedupe, describe_keys, join_side_reasons
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.model import Finding, Output, Part, Side
from spark_bucketing.checker.ordering import sort_state
from spark_bucketing.checker.partitioning import kept_union_part, prefixed
from spark_bucketing.checker.projection import project
from spark_bucketing.checker.suggestions import suggestions


def join_and_grouping_findings(query: Query, scans: dict[int, Output], settings: EngineSettings) -> list[Finding]:
    flow = _Flow(scans, settings)
    flow.output(query.root)
    for block in query.blocks:  # blocks no other block reads (e.g. scalar subqueries)
        flow.output(block)
    return flow.findings


class _Flow:
    """Each block's output, computed once, readers asking for what they read."""

    def __init__(self, scans: dict[int, Output], settings: EngineSettings):
        self.scans = scans
        self.settings = settings
        self.findings: list[Finding] = []
        self._outputs: dict[int, Output] = {}

    def output(self, block: Block) -> Output:
        if id(block) not in self._outputs:
            self._outputs[id(block)] = self._compute(block)
        return self._outputs[id(block)]

    def _compute(self, block: Block) -> Output:
        if isinstance(block.node, exp.SetOperation):
            return self.set_operation_output(block)
        if block.select is None:
            return Output(reasons=[E.NOT_BUCKETED])
        return self.select_output(block)

    def source_outputs(self, block: Block) -> dict[str, Output]:
        out = {}
        for alias, source in block.sources.items():
            if source.block is not None:
                out[alias] = self.output(source.block)
            elif source.table is not None:
                out[alias] = self.scans[id(source.table)]
        return out

    def set_operation_output(self, block: Block) -> Output:
        node = block.node
        branches = [self.output(b) for b in block.branches]
        first = branches[0] if branches else None
        types = dict(first.types) if first else {}
        part = None
        if isinstance(node, exp.Union) and node.args.get("distinct"):
            # UNION (DISTINCT) is an aggregation on every column: a shuffle by all of them.
            cols = list(types)
            side = Side(relation=None, keys=cols, bucketed=False, shuffle=True, reasons=[E.UNION], local_keys=cols)
            self.findings.append(
                Finding(
                    "distinct",
                    source_line(node),
                    [side],
                    ["a UNION loses bucketing: use UNION ALL where duplicates cannot occur"],
                )
            )
            part = Part(options=[tuple(cols)], num=self.settings.shuffle_partitions, bucketed=False)
        elif isinstance(node, exp.Union):
            part = kept_union_part(branches, self.settings)
        if part is not None and part.bucketed:
            return Output(part=part, types=types, base={c: (None, c) for c in types}, bucketed=True)
        return Output(
            part=part,
            types=types,
            base={c: (None, c) for c in types},
            notes={c: [E.UNION] for c in types},
            reasons=[E.UNION],
            unknown=any(b.unknown for b in branches),
        )

    # ---- a SELECT block ---------------------------------------------------

    def select_output(self, block: Block) -> Output:
        select = block.select
        sources = self.source_outputs(block)
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
            part, unk = self.judge_subqueries(where.this, block, acc_aliases, part, sources)
            unknown = unknown or unk

        windows = block_windows(select)
        if part is not None and (select.args.get("group") is not None or select.args.get("distinct") or windows):
            part = replace(part, scan=False)
        for grouping in block_groupings(select, windows):
            part, finding = judge_grouping(grouping, part, sources, self.settings)
            self.findings.append(finding)
        return project(select, sources, part, single=len(acc_aliases) == 1, unknown=unknown)

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
        self, where: exp.Expression, block: Block, left_aliases: list[str], part: Part | None, sources: dict
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
                sub_block = block.subquery(sub)
                if sub_block is None or not isinstance(sub, exp.Select) or len(sub.expressions) != 1:
                    continue
                alias = f"__sb_subquery_{n}"
                right = self.output(sub_block)
                pairs = [(key_of(inner.this, only), (alias, sub.expressions[0].alias_or_name.lower()))]
                if negated:
                    self.null_aware_anti_join(inner, pairs, left_aliases, alias, {**sources, alias: right})
                    continue
                kind = "semi"
            elif isinstance(inner, exp.Exists) and isinstance(inner.this, exp.Select):
                sub = inner.this
                sub_block = block.subquery(sub)
                from_expr = sub.args.get("from_") or sub.args.get("from")
                if sub_block is None or from_expr is None or sub.args.get("joins") or sub.args.get("where") is None:
                    continue
                alias = from_expr.this.alias_or_name
                right = self.source_outputs(sub_block).get(alias)
                if right is None or alias in left_aliases:
                    continue
                pairs = equi_pairs(sub.args["where"].this, set(left_aliases), alias)
                if not pairs:
                    continue
                kind = "anti" if negated else "semi"
            else:
                continue
            part, unk = self.judge_pairs(
                pairs, kind, source_line(inner), left_aliases, alias, part, {**sources, alias: right}
            )
            unknown = unknown or unk or right.unknown
        return part, unknown

    def null_aware_anti_join(self, node, pairs, left_aliases, alias, sources) -> None:
        left = describe_keys(left_aliases, [pairs[0][0]], sources)
        right = describe_keys([alias], [pairs[0][1]], sources)
        sides = [
            Side(relation=d.relation, keys=d.keys, bucketed=False, shuffle=False, local_keys=d.local)
            for d in (left, right)
        ]
        finding = Finding(
            "join", source_line(node), sides, join_type="anti (null-aware)", unknown=left.unknown or right.unknown
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
        left = JoinSide(left_part, l_keys, describe_keys(left_aliases, l_keys, sources))
        right = JoinSide(right_part, r_keys, describe_keys([right_alias], r_keys, sources))
        left.type_ok, right.type_ok = coerced_sides(l_keys, r_keys, sources, self.settings.ansi)
        unknown = left.desc.unknown or right.desc.unknown
        choice = shuffle_choice(left, right, self.settings)

        finding = Finding(
            "join",
            line,
            [self.side(left, choice.left, right, choice.num), self.side(right, choice.right, left, choice.num)],
        )
        finding.join_type, finding.unknown = kind, unknown
        finding.suggestions = suggestions(finding, self.settings, left_part, right_part)
        self.findings.append(finding)
        return join_output(kind, left, right, choice), unknown

    def side(self, s: JoinSide, shuffled: SideChoice, other: JoinSide, num: int) -> Side:
        reasons = []
        if shuffled.shuffle:
            reasons = join_side_reasons(s.part, s.keys, s.plain, s.type_ok, s.desc, self.settings) + shuffled.extra
        plain_join = s.plain and other.plain
        return Side(
            relation=s.desc.relation,
            keys=s.desc.keys,
            bucketed=bool(s.part and s.part.bucketed),
            shuffle=shuffled.shuffle,
            reasons=dedupe(reasons),
            local_keys=s.desc.local,
            sort=sort_state(s.part, s.keys, shuffled.shuffle, self.settings, num) if plain_join else None,
        )
