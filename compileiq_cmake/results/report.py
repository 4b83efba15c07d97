"""The HTML report of a tune: one self-contained file (plots inlined as PNG, no scripts, nothing fetched at
view time) drawn from the tune's summary document (summary.py) with matplotlib and a Jinja template
(templates/report.html.j2). `compileiq-cmake report -B build` makes it from the trial store; a tune writes
it into <build>/compileiq/report.html. Nothing here prints: `report_command` says what it wrote as events, and
`summaries_json` is the --json document the command line prints."""

from __future__ import annotations

import base64
import io
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
from .store import TrialStore
from .summary import gpu_tune, write_whole


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _label(flags: list[str]) -> str:
    return " ".join(flags) or "(project's own flags)"


def _on_gpu(doc: dict) -> bool:
    """Whether the summary document is of a GPU tune (summary.gpu_tune)."""
    return gpu_tune(doc["language"], doc["gpus"], (t["gpu"] for t in doc["trials"]))


SHORT = 38  # characters of a flag set's label in a plot (the tables give the whole)
OUTLIER = 2.0  # a flag effect beyond 2x (or under 1/2x) puts the effects plot on a log axis
GENERATOR = b'<meta name="generator" content="compileiq_cmake">'  # templates/report.html.j2's own mark


def short_label(flags: list[str], width: int = SHORT) -> str:
    """A flag set's label for a plot: the flags, shortened in the middle when long."""
    text = _label(flags)
    return text if len(text) <= width else text[: width // 2 - 1] + "..." + text[-(width // 2 - 2) :]


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


TRADEOFFS = (
    ("build_seconds", "build seconds"),
    ("binary_bytes", "size of the target's files (KiB)"),
    ("device_bytes", "device code in them (KiB)"),
    ("energy_joules", "energy per run (J, GPU counter)"),
    ("metric_cost", "the metric (--objective energy)"),
)
_KIB = ("binary_bytes", "device_bytes")


def pareto(trials: list[dict], cost: str) -> list[dict]:
    """The valid trials that no other beats on both speedup (higher) and `cost` (lower: build seconds, bytes,
    joules), by increasing cost; trials without that cost measured (0 or None) are left out."""
    points = sorted(
        (t for t in trials if t.get("speedup") is not None and t.get(cost)), key=lambda t: (t[cost], -t["speedup"])
    )
    front: list[dict] = []
    for t in points:
        if not front or t["speedup"] > front[-1]["speedup"]:
            front.append(t)
    return front


def _tradeoffs(plt, doc: dict) -> str | None:
    """The objective's gain against each co-objective (build seconds, sizes, energy or the metric), the Pareto set
    marked and joined."""
    panels = [(key, label) for key, label in TRADEOFFS if pareto(doc["trials"], key)]
    if not panels:
        return None
    energy = doc.get("objective") == "energy"
    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
    for ax, (key, label) in zip(axes[0], panels, strict=False):
        scale = 1024.0 if key in _KIB else 1.0
        valid = [t for t in doc["trials"] if t.get("speedup") is not None and t.get(key)]
        ax.scatter([t[key] / scale for t in valid], [t["speedup"] for t in valid], color="C0", s=14, label="trials")
        front = pareto(doc["trials"], key)
        ax.plot(
            [t[key] / scale for t in front], [t["speedup"] for t in front], "o-", color="C3", ms=5, label="Pareto set"
        )
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(label)
        ax.set_ylabel("energy gain (search estimate)" if energy else "speedup (search estimate)")
        ax.legend(fontsize=8, frameon=False)
    fig.suptitle(
        "Trade-offs: "
        + ("energy" if energy else "speed")
        + " against build time, size"
        + (", time" if energy else ", energy" if any(key == "energy_joules" for key, _ in panels) else "")
    )
    fig.tight_layout()
    return _png(fig)


def _plots(doc: dict) -> dict[str, str]:
    """Every plot the report shows, by name (a plot with nothing to draw is left out: `empty_sections` says why)."""
    import matplotlib  # noqa: PLC0415

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # noqa: PLC0415

    plots = {"convergence": _convergence(plt, doc)}
    workloads = _workloads(plt, doc)
    if workloads:
        plots["workloads"] = workloads
    tradeoffs = _tradeoffs(plt, doc)
    if tradeoffs:
        plots["tradeoffs"] = tradeoffs
    for key, items, title in (
        ("effects", doc["flag_effects"], "flag effects over all valid trials (95% CI)"),
        ("ablation", doc["ablation"], "ablation: speedup of keeping each flag (95% CI)"),
    ):
        png = _intervals(plt, items, title)
        if png:
            plots[key] = png
    return plots


def _convergence(plt, doc: dict) -> str:
    """Every trial's speedup and the best so far, by unique build."""
    trials = doc["trials"]
    fig, ax = plt.subplots(figsize=(8, 3.6))
    best, xs, ys = 0.0, [], []
    for t in trials:
        if t["speedup"] is not None:
            best = max(best, t["speedup"])
        xs.append(t["index"])
        ys.append(best if best else None)
    ax.step(xs, [y if y is not None else float("nan") for y in ys], where="post", color="C0", label="best so far")
    ran = [t for t in trials if t["speedup"] is not None and t["same_code_as"] is None]
    shared = [t for t in trials if t["speedup"] is not None and t["same_code_as"] is not None]
    invalid = [t for t in trials if t["speedup"] is None]
    ax.scatter(
        [t["index"] for t in ran],
        [t["speedup"] for t in ran],
        color="C1",
        zorder=3,
        label="measured on a GPU run" if _on_gpu(doc) else "measured (benchmark runs)",
    )
    if shared:
        ax.scatter(
            [t["index"] for t in shared],
            [t["speedup"] for t in shared],
            facecolors="none",
            edgecolors="C2",
            zorder=3,
            label="same device code as an earlier trial (not run)",
        )
    if invalid:
        low = min([t["speedup"] for t in ran] or [1.0])
        ax.scatter(
            [t["index"] for t in invalid],
            [low] * len(invalid),
            marker="x",
            color="C3",
            zorder=3,
            label="invalid (see the table)",
        )
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("trial (unique builds, in order)")
    ax.set_ylabel("speedup over the project's build")
    # the legend below the axes: never over the data
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=2, frameon=False)
    ax.set_title("Convergence of the search")
    return _png(fig)


def _workloads(plt, doc: dict) -> str | None:
    """The winner and the finalists per workload, with 95% intervals: each row labelled by its flags, the
    winner once (its finalist row when it is one, else a row of its own), accepted filled, rejected hollow."""
    rows = []
    winner = doc["winner"]
    confirmed = bool(winner) and winner.get("numbers") in ("confirmation", "validation and confirmation")
    own_row = bool(winner) and (winner.get("source") == "minimal set" or confirmed)
    if own_row:
        rows.append(
            (
                f"written ({winner.get('numbers') if confirmed else 'minimal set'})",
                winner,
                True,
                True,
            )
        )
    for v in doc["finalists"]:
        is_winner = bool(winner) and not own_row and v["flags"] == winner["flags"]
        rows.append(("winner" if is_winner else "finalist", v, v.get("accepted", False), is_winner))
    if not rows:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.9 + 0.45 * len(rows) * max(1, len(doc["workloads"]))))
    labels, y = [], 0
    for kind, v, accepted, is_winner in rows:
        for w in v["workloads"]:
            lo, hi = w["ci"] if w["ci"][0] is not None else (w["speedup"], w["speedup"])
            hi = hi if hi is not None and math.isfinite(hi) else w["speedup"]
            color = "C0" if is_winner else ("C2" if accepted else "C3")
            ax.errorbar(
                [w["speedup"]],
                [y],
                xerr=[[w["speedup"] - lo], [hi - w["speedup"]]],
                fmt="o",
                color=color,
                capsize=3,
                markerfacecolor=color if accepted else "white",
            )
            workload = " ".join(w["workload"]) or "(no arguments)"
            labels.append(f"{kind}: {short_label(v['flags'])} | {workload}")
            y += 1
    ax.set_yticks(range(len(labels)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_xlabel("speedup per workload (interleaved re-measurement, 95% CI)")
    from matplotlib.lines import Line2D  # noqa: PLC0415

    keys = [
        Line2D([], [], marker="o", ls="", color="C0", label="winner (written)"),
        Line2D([], [], marker="o", ls="", color="C2", label="accepted"),
        Line2D([], [], marker="o", ls="", color="C3", markerfacecolor="white", label="rejected"),
    ]
    ax.legend(
        handles=keys,
        fontsize=8,
        loc="upper center",
        bbox_to_anchor=(0.5, -0.25 if len(labels) > 2 else -0.5),
        ncol=3,
        frameon=False,
    )
    return _png(fig)


def _intervals(plt, items: list[dict], title: str) -> str | None:
    """Flag effects or ablation contributions with their 95% intervals (at most 12); None when none has an
    interval to draw (an open end: one run each, nothing decided; or no speedup)."""
    items = [i for i in items if i.get("speedup") is not None and None not in i["ci"]][:12]
    if not items:
        return None
    fig, ax = plt.subplots(figsize=(8, 0.6 + 0.35 * len(items)))
    names = [short_label([i["flag"]] if i.get("flag") else i["flags"]) for i in items]
    ax.errorbar(
        [i["speedup"] for i in items],
        range(len(items)),
        xerr=[[i["speedup"] - i["ci"][0] for i in items], [i["ci"][1] - i["speedup"] for i in items]],
        fmt="o",
        capsize=3,
    )
    values = [v for i in items for v in (i["speedup"], *i["ci"]) if v and v > 0]
    if values and (max(values) > OUTLIER or min(values) < 1 / OUTLIER):
        ax.set_xscale("log")  # one effect far out would flatten the others on a linear axis
        title += "; log axis (one effect is far from 1)"
    ax.set_yticks(range(len(items)), names, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(1.0, color="grey", lw=0.8, ls="--")
    ax.set_title(title, fontsize=10)
    return _png(fig)


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


def render(doc: dict) -> str:
    """The HTML of one tune's summary document."""
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True, undefined=jinja2.StrictUndefined
    )
    invalid = Counter(
        (t["status"], " ".join(t["reason"].split()))
        for t in doc["trials"]
        if t["speedup"] is None and t["status"] != "ok"
    )
    throttled = sum(1 for t in doc["trials"] if t["throttled"])

    def fmt(x, digits=3):  # never "nan" in what a person reads: a number not measured says so
        if x is None:
            return ""
        return f"{x:.{digits}f}" if math.isfinite(x) else "not measured"

    env.filters["f"] = fmt
    env.filters["flags"] = _label
    env.filters["plural"] = plural
    return env.get_template("report.html.j2").render(
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
