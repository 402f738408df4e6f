"""How Spark plans one equi-join of two partitioned inputs: which key types
it keeps, which sides it shuffles and into how many partitions, and the
join's output partitioning. The decisions of the Spark model (facts doc,
section 5), without the query walk (flow.py) or the wording (reasons,
suggestions)."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from sqlglot import exp

from spark_bucketing.checker import engines as E
from spark_bucketing.checker.engines import EngineSettings
from spark_bucketing.checker.join_keys import key_type, satisfies
from spark_bucketing.checker.keys import KeyDescription
from spark_bucketing.checker.keytypes import norm_type, wider
from spark_bucketing.checker.model import Output, Part


@dataclass
class JoinSide:
    """One side of a join being judged: its partitioning, its keys, how the
    query names them, and whether Spark keeps its key
    types (type_ok) or casts them."""

    part: Part | None
    keys: list
    desc: KeyDescription
    type_ok: bool = True
    # Where Spark casts the keys (not type_ok): the keys as cast (cast_keys()), or None where not known.
    cast: list | None = None

    @property
    def plain(self) -> bool:
        """Keys that are not plain columns cannot match a partitioning."""
        return all(isinstance(k, tuple) for k in self.keys)


@dataclass
class SideChoice:
    shuffle: bool = True
    extra: list[str] = field(default_factory=list)  # reasons the other side decided


@dataclass
class ShuffleChoice:
    """Which sides Spark shuffles, into how many partitions, by which hash."""

    left: SideChoice
    right: SideChoice
    num: int
    placed_by: str = "spark"  # the kept side's hash: the extension shuffles to match a Hive-hash side


def coerced_sides(
    l_keys: list, r_keys: list, sources: dict[str, Output], ansi: bool, in_subquery: bool = False
) -> tuple[bool, bool]:
    """Whether each side keeps its key types. Spark coerces the two keys of a
    pair to one type, casting the narrower side (both when neither is
    numeric-wider), also when the other key is itself a CAST: that cast's
    type is the key's type. `x IN (subquery)` takes the pair's common type,
    which is the string for a string and a number (not ANSI), where `=`
    casts the string."""
    l_ok, r_ok = True, True
    for lk, rk in zip(l_keys, r_keys, strict=True):
        lt, rt = key_type(lk, sources), key_type(rk, sources)
        if lt and rt and norm_type(lt) != norm_type(rt):
            kept = wider(lt, rt, ansi)
            if in_subquery and not ansi and "string" in (norm_type(lt), norm_type(rt)):
                kept = "left" if norm_type(lt) == "string" else "right"
            l_ok = l_ok and kept == "left"
            r_ok = r_ok and kept == "right"
    return l_ok, r_ok


def cast_keys(l_keys: list, r_keys: list, sources: dict[str, Output], ansi: bool) -> tuple[list | None, list | None]:
    """Each side's keys as the join compares them: a column Spark casts to
    the other key's type as `(alias, "column::type")`, a key a shuffle by
    that cast partitions its output by (a later join comparing the same cast
    needs no shuffle). None for a side with a key whose cast is not known
    (a computed key, a type not known, or both keys cast)."""
    left, right = [], []
    for lk, rk in zip(l_keys, r_keys, strict=True):
        lt, rt = key_type(lk, sources), key_type(rk, sources)
        if not (isinstance(lk, tuple) and isinstance(rk, tuple) and lt and rt):
            return None, None
        kept = "both" if norm_type(lt) == norm_type(rt) else wider(lt, rt, ansi)
        if kept is None:
            return None, None
        left.append(lk if kept in ("both", "left") else (lk[0], f"{lk[1]}::{norm_type(rt)}"))
        right.append(rk if kept in ("both", "right") else (rk[0], f"{rk[1]}::{norm_type(lt)}"))
    return left, right


def _compared_keys(side: JoinSide) -> list | None:
    """The keys a side's partitioning must cluster by: its columns, or their casts where Spark casts them."""
    if not side.plain:
        return None
    return side.keys if side.type_ok else side.cast


def _in_order(*positions: tuple) -> bool:
    return all(list(pos) == sorted(pos) for pos in positions)


def shuffle_choice(left: JoinSide, right: JoinSide, settings: EngineSettings) -> ShuffleChoice:
    """Spark's choice for a join: the sides whose partitioning satisfies the
    keys are kept; of two that cannot join bucket by bucket, the one with
    more partitions (the left one on a tie)."""
    lp, rp = left.part, right.part
    kept = kept_on_more_keys(left, right, settings)
    if kept is not None:
        return ShuffleChoice(SideChoice(shuffle=False), SideChoice(shuffle=False), kept, lp.hash)
    require_all = settings.require_all_cluster_keys
    l_keys, r_keys = _compared_keys(left), _compared_keys(right)
    lpos = satisfies(lp, l_keys, require_all) if l_keys is not None else None
    rpos = satisfies(rp, r_keys, require_all) if r_keys is not None else None
    choice = ShuffleChoice(SideChoice(), SideChoice(), settings.shuffle_partitions)
    if settings.engine == "trino" and lpos is not None and rpos is not None and not _in_order(lpos, rpos):
        # Trino co-locates a join on several bucket columns only with its conditions in the bucket columns'
        # order; otherwise it exchanges both sides (Trino 476's plans, tests/test_trino.py).
        choice.left.extra.append(E.KEY_POSITIONS)
        choice.right.extra.append(E.KEY_POSITIONS)
        return choice
    if lpos is not None and rpos is not None:
        same_hash = lp.hash == rp.hash
        # Trino reads a whole co-located fragment at its smallest count: any two placements that come from
        # bucketed scans, through joins and aggregations too; Spark coalesces or clones scans only.
        both = lp.bucketed and rp.bucketed if settings.engine == "trino" else lp.scan and rp.scan
        joined = E.joined_count(lp.num, rp.num, both, lp.hash, settings)
        if lpos == rpos and same_hash and joined is not None:
            choice.left.shuffle = choice.right.shuffle = False
            choice.num, choice.placed_by = joined, lp.hash
        else:
            keep_left = lp.num >= rp.num
            choice.left.shuffle, choice.right.shuffle = not keep_left, keep_left
            why = E.KEY_POSITIONS if lpos != rpos else E.HASH_DIFFERS if not same_hash else E.BUCKET_COUNT_MISMATCH
            (choice.right if keep_left else choice.left).extra.append(why)
            choice.num = max(lp.num, rp.num)
            choice.placed_by = (lp if keep_left else rp).hash
    elif lpos is not None:
        choice.left.shuffle, choice.num, choice.placed_by = False, lp.num, lp.hash
    elif rpos is not None:
        choice.right.shuffle, choice.num, choice.placed_by = False, rp.num, rp.hash
    return choice


def kept_on_more_keys(left: JoinSide, right: JoinSide, settings: EngineSettings) -> int | None:
    """The partition count when the extension keeps both sides of a join on
    more than their bucket columns (SupersetKeyJoins): two scans of package
    tables, co-partitioned as they are by the keys' positions, hash and
    count. None otherwise (Spark's own rules decide)."""
    lp, rp = left.part, right.part
    if not (settings.superset_join_keys and lp and rp and lp.scan and rp.scan and lp.package and rp.package):
        return None
    if not (left.plain and right.plain and left.type_ok and right.type_ok) or lp.hash != rp.hash:
        return None
    lpos, rpos = satisfies(lp, left.keys, False), satisfies(rp, right.keys, False)
    if lpos is None or lpos != rpos or len(lpos) == len(left.keys):
        return None
    return E.joined_count(lp.num, rp.num, True, lp.hash, settings)


def join_output(kind: str, left: JoinSide, right: JoinSide, choice: ShuffleChoice) -> Part | None:
    """The join's output partitioning: a shuffled side's is its keys'."""

    def out(s: JoinSide, c: SideChoice) -> Part | None:
        if not c.shuffle:
            # A join's output is no scan: no later join coalesces or clones its buckets. A side joined
            # unshuffled is read in the join's partitions: its buckets coalesced or cloned to that count.
            return replace(s.part, scan=False, num=choice.num) if s.part is not None else None
        keys = s.keys if s.type_ok else s.cast  # Spark casts these keys: partitioned by the casts, not the columns
        if keys is None:
            return None
        return Part(options=[tuple(keys)], num=choice.num, bucketed=False, hash=choice.placed_by)

    l_out, r_out = out(left, choice.left), out(right, choice.right)
    if not (left.plain and right.plain) or kind == "full":
        return None
    if kind in ("left", "semi", "anti"):
        return l_out
    if kind == "right":
        return r_out
    options = (l_out.options if l_out else []) + (r_out.options if r_out else [])
    if not options:
        return None
    bucketed = bool(l_out and l_out.bucketed) and not choice.left.shuffle and not choice.right.shuffle
    return Part(options=options, num=choice.num, bucketed=bucketed, hash=choice.placed_by)


BROADCAST_HINTS = ("broadcast", "broadcastjoin", "mapjoin")


def broadcast_hinted(select) -> set[str]:
    """The relations a SELECT's BROADCAST (BROADCASTJOIN, MAPJOIN) hint names."""
    hint = select.args.get("hint")
    names: set[str] = set()
    for h in hint.expressions if hint is not None else []:
        if isinstance(h, exp.JoinHint) and str(h.this).lower() in BROADCAST_HINTS:
            names |= {t.name for t in h.expressions}
    return names


def broadcast_build(kind: str, left_aliases: list[str], right_alias: str, hinted: set[str]) -> str | None:
    """The side Spark broadcasts for a hinted join ("left" or "right"), or
    None: it builds the right side of an inner, left outer, semi or anti
    join, the left of an inner or right outer one (a single relation). Both
    sides hinted on an inner join: the smaller by statistics, not modelled
    (None: the caller says unknown)."""
    right = right_alias in hinted and kind in ("inner", "left", "semi", "anti")
    left = len(left_aliases) == 1 and left_aliases[0] in hinted and kind in ("inner", "right")
    if right and left:
        return "both"
    return "right" if right else "left" if left else None


def broadcast_output(kind: str, streamed: Part | None, keys: list, build_keys: list | None) -> Part | None:
    """A broadcast hash join keeps its streamed side's partitioning; an
    inner one also satisfies the broadcast side's equal keys (`build_keys`,
    None where the keys' types differ). Its output is no scan: no later join
    coalesces or clones its buckets."""
    if streamed is None:
        return None
    streamed = replace(streamed, scan=False)
    if kind != "inner" or build_keys is None:
        return streamed
    extra = [tuple(build_keys[keys.index(c)] for c in opt) for opt in streamed.options if all(c in keys for c in opt)]
    return replace(streamed, options=streamed.options + extra)
