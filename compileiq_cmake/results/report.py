"""The HTML report of a tune: one self-contained file (plots inlined as PNG, no scripts, nothing fetched at
view time) drawn from the tune's summary document (summary.py) with matplotlib and a Jinja template
(templates/report.html.j2). `compileiq-cmake report -B build` makes it from the trial store; a tune writes
it into <build>/compileiq/report.html. Nothing here prints: `report_command` says what it wrote as events, and
`summaries_json` is the --json document the command line prints."""

from __future__ import annotations

import functools
import json
import math
from collections import Counter
from pathlib import Path

import jinja2

from ..model.errors import CompileIQError, UsageError
from ..model.events import EventStream
from ..model.wording import plural
from ..system.resources import templates_dir
from ..system.writable import check_output
from .report_plots import TRADEOFFS, _label, _on_gpu, _plots, pareto
from .store import TrialStore
from .summary import write_whole

GENERATOR = b'<meta name="generator" content="compileiq_cmake">'  # templates/report.html.j2's own mark


def empty_sections(doc: dict) -> dict[str, str]:
    """Why a section of the report has nothing to show, per section that has not (the template says it
    where the plot would be)."""
    valid = sum(1 for t in doc["trials"] if t["speedup"] is not None)
    out = {}
    if not [e for e in doc["flag_effects"] if e.get("speedup") is not None and None not in e["ci"]]:
        flags = len({f for t in doc["trials"] if t["speedup"] is not None for f in t["flags"]})
        out["effects"] = (
            f"flag effects need more valid trials than flags varied (at least {flags + 2} here; "
            f"the tune had {valid}) and each flag both in and out of some trial"
        )
    if not doc["winner"]:
        out["ablation"] = "no flag set was accepted, so there is no winner to ablate"
    elif not [c for c in doc["ablation"] if c.get("speedup") is not None and None not in c["ci"]]:
        out["ablation"] = "the winner's flags were not ablated (see the table: the time box or a single flag)"
    if not doc["finalists"]:
        out["workloads"] = "no trial beat the baseline in the search: nothing was validated"
    if not any(pareto(doc["trials"], key) for key, _ in TRADEOFFS):
        out["tradeoffs"] = (
            "no valid trial has its build seconds, size or energy recorded (a replay, or a store of an older version)"
        )
    return out


def _resources(doc: dict) -> list[dict]:
    """Per kernel: registers, spills and instructions of the project's build, the winner's, and the range
    over the valid trials (from the device-code fingerprints)."""
    trials = doc["trials"]
    base = next((t for t in trials if t["index"] == 0), None)
    win_flags = doc["winner"]["flags"] if doc["winner"] else None
    winner = next((t for t in trials if win_flags is not None and t["flags"] == win_flags), None)
    names = [k["name"] for k in (base or {}).get("kernels", [])]
    rows = []
    for name in names:

        def of(t, name=name):
            return next((k for k in t["kernels"] if k["name"] == name), None) if t else None

        seen = [k for t in trials if t["speedup"] is not None for k in [of(t)] if k]
        b, w = of(base), of(winner)
        rows.append(
            {
                "name": name.split(":", 1)[-1],
                "base": b,
                "winner": w,
                "registers": (min(k["registers"] for k in seen), max(k["registers"] for k in seen)) if seen else None,
                "spills": (min(k["spill_bytes"] for k in seen), max(k["spill_bytes"] for k in seen)) if seen else None,
            }
        )
    return rows


@functools.cache
def _template() -> jinja2.Template:
    """The report's template, compiled once per process (a suite renders one report per target)."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True, undefined=jinja2.StrictUndefined
    )
    env.filters["f"] = _fmt
    env.filters["flags"] = _label
    env.filters["plural"] = plural
    return env.get_template("report.html.j2")


def _fmt(x, digits=3):  # never "nan" in what a person reads: a number not measured says so
    if x is None:
        return ""
    return f"{x:.{digits}f}" if math.isfinite(x) else "not measured"


def render(doc: dict) -> str:
    """The HTML of one tune's summary document."""
    invalid = Counter(
        (t["status"], " ".join(t["reason"].split()))
        for t in doc["trials"]
        if t["speedup"] is None and t["status"] != "ok"
    )
    throttled = sum(1 for t in doc["trials"] if t["throttled"])
    return _template().render(
        doc=doc,
        plots=_plots(doc),
        empty=empty_sections(doc),
        resources=_resources(doc),
        invalid=sorted(invalid.items(), key=lambda kv: -kv[1]),
        throttled=throttled,
        isfinite=math.isfinite,
        on_gpu=_on_gpu(doc),
        gpu_column=any(t["gpu"] for t in doc["trials"]),
        pareto_build=pareto(doc["trials"], "build_seconds"),
    )


def write_report(path: Path, doc: dict) -> str:
    """Write the report; "" on success, else why not (a note for the tune's log: never silent)."""
    try:
        html = render(doc)
    except ImportError as exc:
        return f"{exc.name} is missing: pip install matplotlib"
    try:
        write_whole(path, html)
    except OSError as exc:
        return f"cannot write {path}: {exc.strerror or exc}"
    return ""


def load_summaries(build_dir: Path) -> list[dict]:
    """The summary documents of the tunes stored in a build tree (newest tune per target and architecture)."""
    path = build_dir / "compileiq" / "trials.sqlite"
    suite_stores = sorted((build_dir / "compileiq" / "suite").glob("*/trials.sqlite"))  # a suite's targets in flight
    if not path.is_file() and not suite_stores:
        raise CompileIQError(
            f"{build_dir} holds no tune results ({path} does not exist); run a tune with -B {build_dir}"
        )
    docs = []
    for each in ([path] if path.is_file() else []) + suite_stores:
        store = TrialStore(each, "", reader=True)  # a read command: a damaged store is said and left
        if store.note:
            raise CompileIQError(store.note)
        try:
            for spec in store.load_all():
                store.spec = spec
                doc = store.load_result("summary")
                if doc is not None:
                    docs.append(doc)
        finally:
            store.close()
    if not docs:
        raise CompileIQError(f"the tunes in {path} did not finish (no summary stored); run the tune to its end")
    return sorted(docs, key=lambda d: d["date"])


NAMING = (
    "one report per tune, named <name>-<target>-<sm_ARCH or compiler>.html beside the -o file (default "
    "<build>/compileiq/report.html); where two tunes would share a name, -<build type>, -<compiler>-<version> and "
    "then -<tune date> follow, as far as they tell them apart (-2, -3 in date order if nothing does)"
)


def report_paths(docs: list[dict], output: Path) -> list[Path]:
    """The file of each tune's report: `output` itself for one tune; for several, one file each beside it
    (NAMING), never two tunes in one file."""
    if len(docs) == 1:
        return [output]
    parts = [[doc["target"], f"sm_{doc['arch']}" if doc["arch"] else doc["compiler"].split()[0]] for doc in docs]
    extras = (
        lambda d: d["build_type"] or "no-build-type",
        lambda d: d["compiler"].replace(" ", "-"),
        lambda d: d["date"].replace(":", "").replace("+0000", "Z"),
    )
    for extra in extras:  # more of what tells colliding tunes apart, only where names collide
        names = Counter("-".join(p) for p in parts)
        groups: dict[str, list[int]] = {}
        for i, p in enumerate(parts):
            if names["-".join(p)] > 1:
                groups.setdefault("-".join(p), []).append(i)
        for members in groups.values():
            if len({extra(docs[i]) for i in members}) > 1:
                for i in members:
                    parts[i].append(extra(docs[i]))
    seen: Counter = Counter()
    paths = []
    for p in parts:  # in date order: the same name again (same second, same everything) is numbered
        name = "-".join(p)
        seen[name] += 1
        name += f"-{seen[name]}" if seen[name] > 1 else ""
        safe = "".join(c if c.isalnum() or c in "._+-" else "_" for c in name)
        paths.append(output.with_name(f"{output.stem}-{safe}{output.suffix or '.html'}"))
    return paths


def summaries_json(build_dir: Path) -> str:
    """`report --json`: the stored tunes' summary documents (one tune: its document; several: a list)."""
    docs = load_summaries(build_dir)
    return json.dumps(docs if len(docs) > 1 else docs[0], indent=1)


def written_by_tool(_path: Path, head: bytes) -> bool:
    """A report this tool wrote (its GENERATOR tag; an older one: its title): what `report -o` may replace."""
    return GENERATOR in head or b"<title>compileiq: " in head[:4096]


def report_command(build_dir: Path, output: Path | None, events: EventStream) -> list[Path]:
    """`compileiq-cmake report`: one HTML file per stored tune; each file written is a stage result ("report:
    <path>", data path), with several tunes first the naming rule (info)."""
    docs = load_summaries(build_dir)
    paths = report_paths(docs, output or build_dir / "compileiq" / "report.html")
    try:  # each checked before any is written
        for path in paths if output is not None else ():
            check_output(path, "report -o", written_by_tool, "an HTML report")
    except CompileIQError as exc:
        raise UsageError(str(exc)) from None
    if len(docs) > 1:
        events.info(f"report: {len(docs)} tunes stored in {build_dir}: {NAMING}", stage="report", tunes=len(docs))
    written = []
    for target, doc in zip(paths, docs, strict=False):
        problem = write_report(target, doc)
        if problem:
            raise CompileIQError(f"no report: {problem}")
        events.stage_result("report", f"report: {target}", path=str(target), target=doc["target"])
        written.append(target)
    return written
