"""Pass 2: joins and groupings. The partitioning flows from the scans (pass
1) through each block's joins, IN/EXISTS subqueries, groupings and
projection to the blocks that read it; every join and grouping on the way is
judged (joins.py, groupings.py) and becomes a finding.

The model tracks, per block, the partitioning its output keeps: the bucket
columns of a bucketed scan while they pass through untouched, or the keys of
the last shuffle. A side needs no shuffle when that partitioning already
satisfies what the join or aggregation requires."""

from __future__ import annotations

import copy
from dataclasses import replace

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.blocks import Block, Query
from spark_bucketing.checker.empty import EMPTY, LEFT, RIGHT, Vanished, join_over_empty
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.groupings import block_groupings, block_windows, judge_grouping
from spark_bucketing.checker.join_keys import equi_pairs
from spark_bucketing.checker.joins import (
    JoinSide,
    SideChoice,
    broadcast_build,
    broadcast_hinted,
    broadcast_output,
    cast_keys,
    coerced_sides,
    join_output,
    shuffle_choice,
)
from spark_bucketing.checker.keys import dedupe, describe_keys, join_side_reasons
from spark_bucketing.checker.keytypes import union_types
from spark_bucketing.checker.lines import source_line
from spark_bucketing.checker.model import Finding, Output, Part, Side, settle
from spark_bucketing.checker.needed import ALL, needed_outputs, window_used
from spark_bucketing.checker.ordering import sort_state
from spark_bucketing.checker.outer_joins import planned_join_kinds
from spark_bucketing.checker.partitioning import (
    UNION_FILTERED,
    filtered_placement,
    filtered_unions,
    kept_union_part,
    prefixed,
    stock_union_part,
    trino_union_part,
)
from spark_bucketing.checker.projection import project
from spark_bucketing.checker.redundant import redundant_aggregates
from spark_bucketing.checker.semi_joins import SemiJoin, push_target, subquery_joins
from spark_bucketing.checker.suggestions import suggestions
from spark_bucketing.checker.trino_joins import replicated_without_keys


def join_and_grouping_findings(
    query: Query,
    scans: dict[int, Output],
    settings: EngineSettings,
    crossed_types: set[int] | None = None,
    widened: set[tuple[int, str]] | None = None,
    emptied: set[tuple[int, str]] | None = None,
) -> tuple[list[Finding], set[int]]:
    """The findings of the operators the plan has, and the scans (id() of
    their table nodes) it does not have (empty.py). `crossed_types`: the
    blocks whose joins' verdicts are unknown; `widened`: the UNION columns
    whose branches differ in type; `emptied`: the derived sources a
    never-true filter above them empties (lookups.py, ScanLookups)."""
    flow = _Flow(scans, settings, needed_outputs(query), redundant_aggregates(query))
    flow.filtered_unions = filtered_unions(query)
    flow.crossed_types = crossed_types or set()
    flow.widened = widened or set()
    flow.emptied = emptied or set()
    if flow.output(query.root).empty:
        flow.vanished.block(query.root)
    for block in query.blocks:  # blocks no other block reads (e.g. scalar subqueries)
        flow.output(block)
    return [f for f in flow.findings if id(f) not in flow.vanished.finding_ids], flow.vanished.scans


UNSURE_ACROSS_TYPES = (
    "a literal filter meets a join equality of a string and a number in this FROM clause: Spark compares "
    "casts, may fold the join's keys to the literal and plan the joins differently: the verdict is unknown"
)


class _Flow:
    """Each block's output, computed once, readers asking for what they read."""

    def __init__(
        self,
        scans: dict[int, Output],
        settings: EngineSettings,
        needed: dict[int, set[str] | None],
        redundant: set[int],
    ):
        self.scans = scans
        self.settings = settings
        self.needed = needed  # per block, the output columns its readers use (needed.py)
        self.redundant = redundant  # blocks whose aggregation the optimizer removes (redundant.py)
        self.findings: list[Finding] = []
        self._outputs: dict[int, Output] = {}
        self._spans: dict[int, tuple[int, int]] = {}  # per block, its findings and those of what it reads
        self._semis_below: dict[int, list] = {}  # per block, the IN / EXISTS joins Spark moves into it
        self.vanished = Vanished(self._spans, self.findings)
        self.filtered_unions: dict[int, set[str] | None] = {}  # per UNION ALL, the columns filtered from above
        self.unsure_unions: set[int] = set()  # UNION ALL blocks whose kept placement is unsure (partitioning.py)
        self.crossed_types: set[int] = set()  # blocks whose joins' verdicts are unknown (ScanLookups)
        self.widened: set[tuple[int, str]] = set()  # UNION columns of branches of several types (ScanLookups)
        self.emptied: set[tuple[int, str]] = set()  # derived sources a never-true filter empties (ScanLookups)

    def output(self, block: Block) -> Output:
        if id(block) not in self._outputs:
            start = len(self.findings)
            self._outputs[id(block)] = self._compute(block)
            self._spans[id(block)] = (start, len(self.findings))
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
            if source.block is not None and (id(block), alias) in self.emptied:
                self.output(source.block)
                self.vanished.block(source.block)
                out[alias] = replace(self.output(source.block), empty=True)
            elif source.block is not None:
                out[alias] = self.output(source.block)
            elif source.table is not None:
                out[alias] = self.scans[id(source.table)]
        return out

    def set_operation_output(self, block: Block) -> Output:
        node = block.node
        outputs = [self.output(b) for b in block.branches]
        first = outputs[0] if outputs else None
        for b, o in zip(block.branches, outputs, strict=True):
            if o.empty:
                self.vanished.block(b)
        branches = [o for o in outputs if not o.empty]
        if outputs and not branches:
            return replace(first, empty=True)
        if isinstance(node, exp.Union) and not node.args.get("distinct") and len(branches) == 1 < len(outputs):
            # The other branches are empty: the plan reads this one alone, its partitioning kept.
            (only,) = branches
            return only if list(only.types) == list(first.types) else replace(only, unknown=True)
        types = union_types([o.types for o in outputs])
        part = None
        kept = trino_union_part(branches) if self.settings.engine == "trino" else None
        if isinstance(node, exp.Union) and node.args.get("distinct") and kept and set(kept.options[0]) == set(types):
            # Trino groups branches bucketed alike, on exactly their bucket columns, where they are.
            cols = list(types)
            side = Side(relation=None, keys=cols, bucketed=True, shuffle=False, local_keys=cols)
            self.findings.append(Finding("distinct", source_line(node), [side]))
            part = kept
        elif isinstance(node, exp.Union) and node.args.get("distinct"):
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
        elif isinstance(node, exp.Union) and self.settings.engine == "trino":
            part = kept
        elif isinstance(node, exp.Union):
            filtered = self.filtered_unions.get(id(block), set())
            part = kept_union_part(branches, self.settings)
            if part is None:
                part = stock_union_part(branches, self.settings, filtered)
                effect = filtered_placement(part, filtered, block)
                if effect == "lost":
                    part = None
                elif effect == "unsure":
                    self.unsure_unions.add(id(block))
        if part is not None and part.bucketed:
            unsure = id(block) in self.unsure_unions
            return Output(part=part, types=types, base={c: (None, c) for c in types}, bucketed=True, unknown=unsure)
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
        from_expr = select.args.get("from_") or select.args.get("from")
        if from_expr is None:
            self.source_outputs(block)
            return Output(reasons=[E.NOT_BUCKETED])
        first_alias = from_expr.this.alias_or_name
        acc_aliases = [first_alias]
        where = select.args.get("where")
        aliases = [first_alias, *(j.this.alias_or_name for j in select.args.get("joins") or [])]
        # Before the sources are judged: the joins Spark moves into them are judged there.
        semis = self.place_semi_joins(block, aliases, where)
        sources = self.source_outputs(block)
        first = sources.get(first_alias)
        part = prefixed(first.part, first_alias) if first else None
        unknown = bool(first and first.unknown)
        start = len(self.findings)  # this block's own findings from here (its sources' came before)
        empty = bool(first and first.empty)
        self.vanished.sources(block, [a for a, o in sources.items() if o.empty and block.sources[a].table is not None])
        kinds = planned_join_kinds(select, first_alias)
        unsure = UNSURE_ACROSS_TYPES if id(block) in self.crossed_types else None
        for join, kind in zip(select.args.get("joins") or [], kinds, strict=True):
            right_alias = join.this.alias_or_name
            right = sources.get(right_alias)
            if empty or (right is not None and right.empty):
                part, empty = self.join_over_empty(block, kind, empty, acc_aliases, right_alias, part, sources, start)
            else:
                judged = len(self.findings)
                part, unk = self.judge_join(join, kind, acc_aliases, right_alias, part, sources)
                unknown = unknown or unk or bool(right and right.unknown)
                for finding in self.findings[judged:] if unsure else []:
                    finding.unknown, finding.suggestions = True, [unsure]
            acc_aliases.append(right_alias)
        semis += self._semis_below.get(id(block), [])  # moved here from a reader's WHERE
        if semis and not empty:
            part, unk = self.judge_semi_joins(semis, acc_aliases, part, sources)
            unknown = unknown or unk
        if empty and not _global_aggregate(select):
            out = project(select, sources, None, single=len(acc_aliases) == 1, unknown=unknown)
            return replace(out, empty=True)

        want = self.needed.get(id(block), ALL)
        windows = [w for w in block_windows(select) if window_used(w, select, want)]
        if id(block) in self.redundant:
            # The reader's aggregation groups this block's input: no operator here, the partitioning passes.
            return project(select, sources, part, single=len(acc_aliases) == 1, unknown=unknown)
        groupings = block_groupings(select, windows)
        if part is not None and (select.args.get("group") is not None or groupings):
            part = replace(part, scan=False)
        for grouping in groupings:
            part, finding = judge_grouping(grouping, part, sources, self.settings)
            self.findings.append(finding)
        self.explain_unsure_unions(block, start)
        return project(select, sources, part, single=len(acc_aliases) == 1, unknown=unknown)

    def explain_unsure_unions(self, block: Block, start: int) -> None:
        """The block's unknown findings over a union whose placement is unsure say why."""
        if not any(s.block is not None and id(s.block) in self.unsure_unions for s in block.sources.values()):
            return
        for finding in self.findings[start:]:
            if finding.unknown and not finding.suggestions:
                finding.suggestions = [UNION_FILTERED]

    # ---- joins --------------------------------------------------------------

    def join_over_empty(self, block, kind, left_empty, left_aliases, right_alias, left_part, sources, start):
        """A join with an empty side (empty.py): no operator; (the
        partitioning of what is left, whether it is empty)."""
        right = sources[right_alias]
        planned = join_over_empty(kind, left_empty, right.empty)
        if planned in (EMPTY, RIGHT):
            self.vanished.findings(start, len(self.findings))
            self.vanished.sources(block, left_aliases)
        if planned in (EMPTY, LEFT):
            self.vanished.sources(block, [right_alias])
        if planned == RIGHT:
            return prefixed(right.part, right_alias), False
        return (None, True) if planned == EMPTY else (left_part, False)

    def judge_join(
        self,
        join: exp.Join,
        kind: str,
        left_aliases: list[str],
        right_alias: str,
        left_part: Part | None,
        sources: dict[str, Output],
    ) -> tuple[Part | None, bool]:
        """`kind`: the join's kind as Spark plans it (outer_joins.py)."""
        pairs = equi_pairs(join.args.get("on"), set(left_aliases), right_alias)
        if sources.get(right_alias) is None or not pairs:
            return None, False  # a cross join or a non-equi join: not a shuffle question
        line = source_line(join)
        if self.settings.engine == "trino":
            if replicated_without_keys(kind, pairs, join.args.get("on"), join.parent_select.args.get("where")):
                return self.replicated_join(pairs, kind, line, left_aliases, right_alias, left_part, sources)
        # Spark's hints are comments to Trino.
        hinted = broadcast_hinted(join.parent_select) if self.settings.engine == "spark" else set()
        build = broadcast_build(kind, left_aliases, right_alias, hinted)
        if build is None:
            return self.judge_pairs(pairs, kind, line, left_aliases, right_alias, left_part, sources)
        return self.broadcast_join(build, pairs, kind, line, left_aliases, right_alias, left_part, sources)

    def replicated_join(self, pairs, kind, line, left_aliases, right_alias, left_part, sources):
        """A join Trino plans without its equality (trino_joins.py): the right side is copied to every task,
        the left side's partitioning goes on."""
        l_keys, r_keys = [lk for lk, _ in pairs], [rk for _, rk in pairs]
        left = describe_keys(left_aliases, l_keys, sources)
        right = describe_keys([right_alias], r_keys, sources)
        right_part = sources[right_alias].part
        finding = Finding(
            "join",
            line,
            [
                Side(left.relation, left.keys, bool(left_part and left_part.bucketed), False, local_keys=left.local),
                Side(
                    right.relation,
                    right.keys,
                    bool(right_part and right_part.bucketed),
                    True,
                    [E.KEYS_FIXED_BY_LITERAL],
                    local_keys=right.local,
                ),
            ],
            join_type=kind,
            unknown=left.unknown or right.unknown,
        )
        finding.suggestions = suggestions(finding, self.settings, left_part, prefixed(right_part, right_alias))
        self.findings.append(finding)
        return left_part, finding.unknown

    def broadcast_join(self, build, pairs, kind, line, left_aliases, right_alias, left_part, sources):
        """A join the query's hint makes a broadcast hash join: no side is
        shuffled, and the streamed side's partitioning goes on (joins.py)."""
        l_keys, r_keys = [lk for lk, _ in pairs], [rk for _, rk in pairs]
        descs = [describe_keys(left_aliases, l_keys, sources), describe_keys([right_alias], r_keys, sources)]
        sides = [
            Side(relation=d.relation, keys=d.keys, bucketed=False, shuffle=False, local_keys=d.local) for d in descs
        ]
        finding = Finding("join", line, sides, join_type=kind, unknown=descs[0].unknown or descs[1].unknown)
        finding.suggestions = [f"broadcast by the query's hint: the {build} side is copied to every task, no shuffle"]
        self.findings.append(finding)
        if build == "both":
            finding.unknown = True
            finding.suggestions = [
                "the hint names both sides: Spark broadcasts the smaller by its statistics, which the checker "
                "does not read: the verdict is unknown"
            ]
            return None, True
        right_part = prefixed(sources[right_alias].part, right_alias)
        # Keys of two types: the hash join compares a cast, which no partitioning of the other side names.
        same_types = all(coerced_sides(l_keys, r_keys, sources, self.settings.ansi))
        if build == "right":
            return broadcast_output(kind, left_part, l_keys, r_keys if same_types else None), finding.unknown
        return broadcast_output(kind, right_part, r_keys, l_keys if same_types else None), finding.unknown

    def place_semi_joins(self, block: Block, aliases: list[str], where) -> list[tuple[SemiJoin, list]]:
        """The WHERE clause's IN / EXISTS joins judged in this block; the
        others are handed to the blocks Spark moves them into (semi_joins.py)."""
        here = []
        for semi, left in subquery_joins(where.this, block, aliases) if where is not None else []:
            source = block.sources.get(aliases[0]) if len(aliases) == 1 else None
            targets: list | None = []
            if source is not None and source.block is not None and source.block.readers == 1:
                # A join on plain columns moves (NOT IN is broadcast anyway): on several, where each moves to
                # the same blocks (PushDownLeftSemiAntiJoin: every column a grouping one).
                if semi.kind != "anti (null-aware)" and all(isinstance(k, tuple) for k in left):
                    targets = _common_targets([push_target(source.block, k[1], self.needed) for k in left])
                    if targets and any((id(source.block), k[1]) in self.widened for k in left):
                        # In each branch the join compares the branch's column cast to the union's type: judged
                        # there, each verdict unknown.
                        semi.unknown = True
            if targets is None:
                semi.unknown = True
            for target, keys in targets or []:
                self._semis_below.setdefault(id(target), []).append((semi, keys))
            if not targets:
                here.append((semi, left))
        return here

    def judge_semi_joins(
        self, semis: list[tuple[SemiJoin, list]], left_aliases: list[str], part: Part | None, sources: dict
    ) -> tuple[Part | None, bool]:
        """Semi and anti joins on this block's rows: `NOT IN` is a null-aware
        anti join, which Spark always broadcasts. Returns the partitioning and
        whether a side is unknown."""
        unknown = False
        for semi, left in semis:
            if semi.right_from_item:
                right = self.source_outputs(semi.right_block).get(semi.right_alias)
            else:
                right = self.output(semi.right_block)
            if right is None:
                continue
            if right.empty:
                # An IN / EXISTS subquery becomes its join after the optimizer emptied the subquery: the join
                # stays, over an empty relation that states no partitioning (seen in Spark 4's plans; a LEFT
                # SEMI JOIN written as one is removed with its empty side, join_over_empty).
                if semi.right_from_item:
                    self.vanished.sources(semi.right_block, [semi.right_alias])
                else:
                    self.vanished.block(semi.right_block)
                right = Output(part=None, reasons=[E.EMPTY_SUBQUERY], types=right.types, base=right.base)
            if semi.judged:
                self.plan_subquery_again(semi)
            semi.judged += 1
            with_right = {**sources, semi.right_alias: right}
            pairs = list(zip(left, semi.right_keys, strict=True))
            if semi.kind == "anti (null-aware)":
                self.null_aware_anti_join(semi.node, pairs, left_aliases, semi.right_alias, with_right)
                continue
            part, unk = self.judge_pairs(
                pairs, semi.kind, semi.line, left_aliases, semi.right_alias, part, with_right, not semi.right_from_item
            )
            if semi.unknown:
                self.findings[-1].unknown = True
                self.findings[-1].suggestions.insert(
                    0,
                    "Spark moves this IN/EXISTS join into the branches of the UNION it filters, in a way the "
                    "checker does not model: the verdict is unknown",
                )
            unknown = unknown or unk or right.unknown
        return part, unknown

    def plan_subquery_again(self, semi: SemiJoin) -> None:
        """A join moved into several UNION branches: Spark plans its subquery
        once per branch, each with its own operators (their findings, again)."""
        block = semi.right_block
        if semi.right_from_item:
            block = block.sources[semi.right_alias].block
        if block is not None and id(block) in self._spans:
            start, end = self._spans[id(block)]
            self.findings.extend(copy.deepcopy(f) for f in self.findings[start:end])

    def null_aware_anti_join(self, node, pairs, left_aliases, alias, sources) -> None:
        """NOT IN (subquery): Spark broadcasts the subquery's rows (a broadcast, no shuffle); Trino copies them
        to every task through an exchange (its NULLs decide every row)."""
        left = describe_keys(left_aliases, [pairs[0][0]], sources)
        right = describe_keys([alias], [pairs[0][1]], sources)
        trino = self.settings.engine == "trino"
        sides = [
            Side(relation=left.relation, keys=left.keys, bucketed=False, shuffle=False, local_keys=left.local),
            Side(
                relation=right.relation,
                keys=right.keys,
                bucketed=False,
                shuffle=trino,
                reasons=[E.NULL_AWARE_ANTI_JOIN] if trino else [],
                local_keys=right.local,
            ),
        ]
        finding = Finding(
            "join", source_line(node), sides, join_type="anti (null-aware)", unknown=left.unknown or right.unknown
        )
        finding.suggestions = [
            "NOT IN (subquery) runs as a null-aware anti join that copies every row of the subquery to every task: "
            "where the key cannot be NULL, write NOT EXISTS (an anti join that can use the buckets)"
            if trino
            else "NOT IN (subquery) runs as a null-aware anti join that broadcasts every row of the subquery: "
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
        in_subquery: bool = False,
    ) -> tuple[Part | None, bool]:
        """Judges one join of the sources at `left_aliases` with the one at
        `right_alias` on `pairs` of keys; returns the join's output
        partitioning and whether a side is unknown."""
        right_part = prefixed(sources[right_alias].part, right_alias)
        l_keys, r_keys = [lk for lk, _ in pairs], [rk for _, rk in pairs]
        left = JoinSide(left_part, l_keys, describe_keys(left_aliases, l_keys, sources))
        right = JoinSide(right_part, r_keys, describe_keys([right_alias], r_keys, sources))
        left.type_ok, right.type_ok = coerced_sides(l_keys, r_keys, sources, self.settings.ansi, in_subquery)
        if not in_subquery:  # `x IN (subquery)` coerces by its own rule (coerced_sides)
            left.cast, right.cast = cast_keys(l_keys, r_keys, sources, self.settings.ansi)
        unknown = left.desc.unknown or right.desc.unknown
        choice = shuffle_choice(left, right, self.settings)
        for part, taken in ((left_part, not choice.left.shuffle), (right_part, not choice.right.shuffle)):
            if taken:
                settle(part)

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
            reasons += self.obstacles_behind_the_keys(s, other, reasons)
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

    def obstacles_behind_the_keys(self, s: JoinSide, other: JoinSide, reasons: list[str]) -> list[str]:
        """What still shuffles a side joined on more than its bucket columns once that is allowed: the other
        side's hash or bucket count. Reported with it, so that the first fix is not taken for the last."""
        sp, op = s.part, other.part
        if E.KEYS_SUPERSET not in reasons or not (sp and op and sp.bucketed and op.bucketed):
            return []
        if sp.hash != op.hash:
            return [E.HASH_DIFFERS]
        if E.joined_count(sp.num, op.num, sp.scan and op.scan, sp.hash, self.settings) is None:
            return [E.BUCKET_COUNT_MISMATCH]
        return []


def _common_targets(per_key: list[list | None]) -> list[tuple[Block, list]] | None:
    """Where a semi join on several columns is planned, from each column's push_target: below, where
    every column moves into the same blocks ([(block, its keys there)]); [] where none moves; None where
    they disagree or one cannot be placed."""
    if not per_key or any(t is None for t in per_key):
        return None
    if not any(per_key):
        return []
    if not all(per_key) or len({tuple(id(b) for b, _ in t) for t in per_key}) != 1:
        return None
    return [(block, [t[i][1] for t in per_key]) for i, (block, _) in enumerate(per_key[0])]


def _global_aggregate(select: exp.Select) -> bool:
    """An aggregation without GROUP BY: one row, even over no rows."""
    return select.args.get("group") is None and any(
        p.find(exp.AggFunc) is not None and p.find(exp.Window) is None for p in select.expressions
    )
