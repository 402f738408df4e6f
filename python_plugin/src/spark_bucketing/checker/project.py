"""The checker over a dbt project: compile (or reuse) it, pick the selected
models, build the catalog, and judge every model's compiled query."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import sqlglot
import yaml
from sqlglot import exp

from spark_bucketing.checker.analyze import analyze_sql
from spark_bucketing.checker.engines import EXTENSION_KEYS, SESSION_KEYS, EngineSettings
from spark_bucketing.checker.gate import lost_bucket_join
from spark_bucketing.checker.model import Finding
from spark_bucketing.checker.relations import Catalog, catalog_from_manifest_file, normalize_name, relation_from_live


class CheckError(Exception):
    """Input the checker cannot work from (no manifest, failed compile...)."""


@dataclass
class ModelReport:
    unique_id: str
    path: str
    findings: list[Finding] = field(default_factory=list)
    verification: list[dict] | None = None
    # --catalog live: "plan" where Spark planned the query and every verdict is the plan's,
    # "static" where it could not (the reason in `not_planned`).
    verdicts: str | None = None
    not_planned: str | None = None
    # Per finding, what the static model said where the plan answered otherwise (None: it agreed).
    corrections: list = field(default_factory=list)


@dataclass
class Report:
    engine: str
    models: list[ModelReport]
    seconds: float = 0.0
    # What the gate reads: the relations as the check saw them (with what the project declares) and the engine.
    catalog: Catalog = field(default_factory=Catalog)
    settings: EngineSettings = field(default_factory=EngineSettings)
    catalog_mode: str = "manifest"

    def to_json(self) -> dict:
        out = {"engine": self.engine, "models": []}
        if any(m.verdicts for m in self.models):
            out["static_disagreements"] = self.static_disagreements()
        for m in self.models:
            findings = []
            for i, f in enumerate(m.findings):
                item = f.to_json()
                if m.verdicts:
                    item["verdict_from"] = m.verdicts
                    correction = m.corrections[i] if i < len(m.corrections) else None
                    if correction is not None:
                        item["static_verdict"] = correction.to_json()
                if m.verification is not None and i < len(m.verification):
                    item["verified"] = m.verification[i]["matched"]
                    key = "plan_buckets" if f.kind == "lookup" else "plan_shuffles"
                    item[key] = m.verification[i]["plan"]
                    if "plan_sorts" in m.verification[i]:
                        item["plan_sorts"] = m.verification[i]["plan_sorts"]
                findings.append(item)
            model = {"model": m.unique_id, "findings": findings}
            if m.not_planned:
                model["not_planned"] = m.not_planned
            out["models"].append(model)
        return out

    def static_disagreements(self) -> int:
        """Findings the static model got wrong, as the plans of --catalog live show."""
        return sum(1 for m in self.models for c in m.corrections if c is not None)

    def shuffling_bucketed_joins(self) -> list[tuple[ModelReport, Finding]]:
        """The joins between bucketed relations that shuffle (gate.py: the same rule as SB01's)."""
        return [(m, f) for m in self.models for f in m.findings if lost_bucket_join(f, self.catalog, self.settings)]

    def unchecked(self) -> list[tuple[ModelReport, str]]:
        """The selected models the check could not judge as asked, and why: no compiled code in the manifest
        (another command wrote it, or the model failed to compile), or, with --catalog live or local, a model
        Spark could not plan (its verdicts are the static model's guesses)."""
        out = []
        for m in self.models:
            if any(f.kind == "query" and f.unknown for f in m.findings):
                out.append((m, next(s for f in m.findings if f.kind == "query" for s in f.suggestions)))
            elif m.verdicts == "static" and m.not_planned:
                out.append((m, f"Spark could not plan it ({m.not_planned})"))
        return out

    def unknowns(self) -> list[tuple[ModelReport, Finding]]:
        return [(m, f) for m in self.models for f in m.findings if f.unknown]


def target_path(project_dir: Path, given: str | None = None) -> Path:
    """The folder dbt writes the project's manifest in, in dbt's order: --target-path, DBT_TARGET_PATH, the
    project's `target-path`, `target`; a relative one under the project's folder."""
    chosen = given or os.environ.get("DBT_TARGET_PATH")
    if not chosen:
        project = yaml.safe_load((project_dir / "dbt_project.yml").read_text()) or {}
        chosen = project.get("target-path") or "target"
    return project_dir / chosen


def compile_project(
    project_dir: Path,
    profiles_dir: Path | None,
    select: list[str],
    target: str | None,
    target_dir: str | None = None,
    own_process: bool = False,
) -> None:
    """`dbt compile`; in a process of its own with `own_process` (a target of method session starts its
    Spark in the process that compiles, and --catalog local needs this process's Spark for itself)."""
    from dbt.cli.main import dbtRunner

    args = ["compile", "--project-dir", str(project_dir), "--quiet"]
    if profiles_dir:
        args += ["--profiles-dir", str(profiles_dir)]
    if target:
        args += ["--target", target]
    if target_dir:
        args += ["--target-path", target_dir]
    if select:
        args += ["--select", *select]
    if own_process:
        import subprocess

        code = "import sys; from dbt.cli.main import cli; sys.exit(cli())"
        # stdout to stderr: the report (maybe JSON) owns stdout.
        done = subprocess.run([sys.executable, "-c", code, *args], stdout=sys.stderr, check=False)
        if done.returncode != 0:
            raise CheckError(f"`dbt {' '.join(args)}` failed: see the messages above")
        return
    # `dbt compile --select` prints the compiled SQL even with --quiet; the
    # report (maybe JSON) owns stdout.
    with contextlib.redirect_stdout(sys.stderr):
        result = dbtRunner().invoke(args)
    if not result.success:
        raise CheckError(f"`dbt {' '.join(args)}` failed: {result.exception or 'see the messages above'}")


def selected_models(manifest: dict, select: list[str]) -> list[dict]:
    """Models with compiled code; `select` narrows them by name, path or unique id
    (dbt's selector syntax is applied by `dbt compile --select` beforehand)."""
    nodes = [n for n in manifest.get("nodes", {}).values() if n.get("resource_type") == "model"]
    if select:
        wanted = set(select)
        nodes = [
            n
            for n in nodes
            if n["name"] in wanted
            or n["unique_id"] in wanted
            or n.get("original_file_path") in wanted
            or any(n.get("original_file_path", "").startswith(s.rstrip("/") + "/") for s in wanted)
        ]
    return sorted(nodes, key=lambda n: n["unique_id"])


def referenced_relations(sql: str) -> set[str]:
    try:
        tree = sqlglot.parse_one(sql, read="spark")
    except sqlglot.errors.ParseError:
        return set()
    ctes = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    names = set()
    for t in tree.find_all(exp.Table):
        name = ".".join(p for p in (t.db, t.name) if p)
        if name and name.lower() not in ctes:
            names.add(normalize_name(name))
    return names


def run_check(
    project_dir: Path,
    *,
    select: list[str] | None = None,
    settings: EngineSettings | None = None,
    catalog_mode: str = "manifest",
    client=None,
    compile: bool = True,
    profiles_dir: Path | None = None,
    target: str | None = None,
    verify_with=None,
    target_dir: str | None = None,
) -> Report:
    select = select or []
    settings = settings or EngineSettings()
    stated = settings.conf
    if client is not None:
        # Model the warehouse as it is: what --conf leaves unsaid, the session says (its extension among it).
        # For Trino, whether the sessions load the extension (issue 92: Trino's verdicts should not depend on it).
        from spark_bucketing.checker.verify import session_values

        keys = SESSION_KEYS if settings.engine == "spark" else EXTENSION_KEYS
        settings = settings.under(session_values(client, keys))
    if compile:
        compile_project(project_dir, profiles_dir, select, target, target_dir)
    target_folder = target_path(project_dir, target_dir)
    manifest_path = target_folder / "manifest.json"
    if not manifest_path.exists():
        raise CheckError(f"no dbt manifest at {manifest_path}: run `dbt compile` there, or drop --no-compile")
    manifest = json.loads(manifest_path.read_text())
    started = time.perf_counter()
    catalog = catalog_from_manifest_file(manifest_path)
    models = selected_models(manifest, select)
    read = {r for m in models for r in referenced_relations(m.get("compiled_code") or "")}
    if catalog_mode == "live":
        if client is None:
            raise CheckError(
                "--catalog live needs a Spark connection (the dbt target, --thrift HOST:PORT or --state-dir)"
            )
        live = Catalog(dict(catalog.relations))
        for name in sorted(read):
            info = relation_from_live(client, name)
            project = catalog.get(name)
            info.declared = project.declared if project is not None else None
            live.add(info)
        catalog = live
    refused: dict[str, str] = {}
    if catalog_mode == "local":
        from spark_bucketing.checker.declared import declare

        if client is None:
            raise CheckError("--catalog local needs its local Spark session (spark_bucketing.checker.declared)")
        refused = declare(client, catalog, read)
    reports = []
    for node in models:
        code = node.get("compiled_code")
        report = ModelReport(node["unique_id"], node.get("original_file_path", ""))
        if code is None:
            why = (
                f"the model has no compiled code in {manifest_path} (a manifest written by a command that did not"
                " compile it, such as `dbt test` or `dbt run` of other models, or a model that failed to compile):"
                " run `dbt compile`, or drop --no-compile"
            )
            report.findings = [Finding("query", 1, [], [why], unknown=True)]
        else:
            report.findings = analyze_sql(code, catalog, settings)
            unplannable = [refused[r] for r in sorted(referenced_relations(code)) if r in refused] if refused else []
            if unplannable and settings.engine == "spark":
                report.verdicts, report.not_planned = "static", unplannable[0]
                report.corrections = [None] * len(report.findings)
            elif catalog_mode in ("live", "local") and settings.engine == "spark":
                take_the_plans_verdicts(report, client, code, stated)
            elif verify_with is not None:
                from spark_bucketing.checker.verify import verify

                report.verification = verify(verify_with, code, report.findings, stated)
        reports.append(report)
    return Report(settings.engine, reports, time.perf_counter() - started, catalog, settings, catalog_mode)


def take_the_plans_verdicts(report: ModelReport, client, code: str, stated: dict[str, str]) -> None:
    """--catalog live: Spark plans the model and each verdict becomes the plan's; where it cannot
    plan it (a relation not built yet), the static verdicts stay, marked so."""
    from spark_bucketing.checker.plan_verdicts import Correction, adopt_plan, plan_only_findings
    from spark_bucketing.checker.verify import plan_answers

    try:
        answers = plan_answers(client, code, report.findings, stated, every_scan=True)
    except Exception as exc:  # noqa: BLE001 - any failure to plan keeps the static verdicts, with the reason
        report.verdicts = "static"
        report.not_planned = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:300]
        report.corrections = [None] * len(report.findings)
        return
    report.verdicts = "plan"
    report.verification = answers.results
    report.corrections = adopt_plan(report.findings, answers.results)
    extra = plan_only_findings(code, answers.leftover)
    report.findings += extra
    report.corrections += [Correction(absent=True) for _ in extra]


def format_text(report: Report) -> str:
    lines = []
    counts = {"ok": 0, "shuffle": 0, "unknown": 0}
    lookups = {"pruned": 0, "all": 0}
    for m in report.models:
        if not m.findings:
            continue
        lines.append(f"{m.unique_id} ({m.path})")
        if m.not_planned:
            lines.append(f"  (not planned, static verdicts: {m.not_planned})")
        for i, f in enumerate(m.findings):
            check = _check_mark(m, i)
            if f.kind == "lookup":
                lookups["pruned" if f.buckets_read != f.buckets else "all"] += 1
                lines += _lookup_lines(f, check)
                continue
            verdict = "UNKNOWN" if f.unknown else ("no shuffle" if f.shuffle_free else "SHUFFLE")
            counts["unknown" if f.unknown else ("ok" if f.shuffle_free else "shuffle")] += 1
            kind = f"{f.kind} ({f.join_type})" if f.join_type and f.join_type.startswith(("semi", "anti")) else f.kind
            lines.append(f"  line {f.line:<4} {kind:<9} {verdict}{check}")
            labels = ["left ", "right"] if f.kind == "join" else ["input"]
            for label, s in zip(labels, f.sides, strict=False):
                state = "shuffled" if s.shuffle else "no shuffle"
                why = f": {', '.join(s.reasons)}" if s.reasons and s.shuffle else ""
                sort = f", sort {s.sort}" if s.sort in ("skipped", "skippable") else ""
                lines.append(
                    f"    {label}: {s.relation or '(derived)'} ({', '.join(s.keys)})"
                    f"  {'bucketed' if s.bucketed else 'unbucketed'}, {state}{why}{sort}"
                )
            for text in f.suggestions:
                lines.append(f"    fix  : {text}")
        lines.append("")
    bad = report.shuffling_bucketed_joins()
    total = sum(counts.values())
    lines.append(
        f"{total} findings in {len(report.models)} models ({report.engine}): {counts['ok']} without shuffle, "
        f"{counts['shuffle']} with shuffle, {counts['unknown']} unknown; "
        f"{len(bad)} joins between bucketed relations shuffle; "
        f"{lookups['pruned']} lookups read some buckets, {lookups['all']} read every bucket"
    )
    planned = [m for m in report.models if m.verdicts == "plan"]
    if any(m.verdicts for m in report.models):
        lines.append(
            f"--catalog {report.catalog_mode}: {len(planned)} of {len(report.models)} models planned by Spark,"
            f" their verdicts the plan's; the static model disagreed on {report.static_disagreements()} findings"
        )
    return "\n".join(lines)


def _check_mark(m: ModelReport, i: int) -> str:
    """What the plan said of finding `i`: from --verify (whether the static verdict matched), or under
    --catalog live (the verdict is the plan's; where the static model said otherwise, that it did)."""
    if m.verdicts == "plan":
        if i >= len(m.verification or []):
            return "  [from the plan: the static model has no finding here]"
        if m.corrections[i] is not None:
            return "  [from the plan: the static model said otherwise]"
        return "  [plan agrees]"
    if m.verification is None:
        return ""
    matched, plan = m.verification[i]["matched"], m.verification[i]["plan"]
    if matched is not None:
        return "  [plan agrees]" if matched else "  [PLAN DISAGREES]"
    return f"  [plan: {plan}]" if isinstance(plan, str) else ""


def _lookup_lines(f: Finding, check: str) -> list[str]:
    s = f.sides[0]
    read = "? (values known only at run time)" if f.buckets_read is None else str(f.buckets_read)
    why = f": {', '.join(s.reasons)}" if s.reasons else ""
    lines = [
        f"  line {f.line:<4} {'lookup':<9} reads {read} of {f.buckets} buckets{check}",
        f"    input: {s.relation} ({', '.join(s.keys)}){why}",
    ]
    return lines + [f"    fix  : {text}" for text in f.suggestions]
