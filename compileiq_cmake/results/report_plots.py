"""The plots of a tune's HTML report (results/report.py): matplotlib figures inlined as PNG data, drawn from the
tune's summary document, and the labels and trade-off fronts they use."""

from __future__ import annotations

import base64
import io
import math

from .summary import gpu_tune


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=96, bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _label(flags: list[str]) -> str:
    return " ".join(flags) or "(project's own flags)"


def _on_gpu(doc: dict) -> bool:
    """Whether the summary document is of a GPU tune (summary.gpu_tune)."""
    return gpu_tune(doc["language"], doc["gpus"], (t["gpu"] for t in doc["trials"]))


SHORT = 38  # characters of a flag set's label in a plot (the tables give the whole)
OUTLIER = 2.0  # a flag effect beyond 2x (or under 1/2x) puts the effects plot on a log axis


def short_label(flags: list[str], width: int = SHORT) -> str:
    """A flag set's label for a plot: the flags, shortened in the middle when long."""
    text = _label(flags)
    return text if len(text) <= width else text[: width // 2 - 1] + "..." + text[-(width // 2 - 2) :]


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


def _tradeoffs(figures, doc: dict) -> str | None:
    """The objective's gain against each co-objective (build seconds, sizes, energy or the metric), the Pareto set
    marked and joined."""
    panels = [(key, label) for key, label in TRADEOFFS if pareto(doc["trials"], key)]
    if not panels:
        return None
    energy = doc.get("objective") == "energy"
    fig, axes = figures.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.4), squeeze=False)
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
    from matplotlib.figure import Figure  # noqa: PLC0415

    class figures:  # pyplot's subplots without pyplot's global state: a suite's targets draw in threads at once
        @staticmethod
        def subplots(*args, figsize: tuple[float, float], **kwargs):
            fig = Figure(figsize=figsize)
            return fig, fig.subplots(*args, **kwargs)

    plots = {"convergence": _convergence(figures, doc)}
    workloads = _workloads(figures, doc)
    if workloads:
        plots["workloads"] = workloads
    tradeoffs = _tradeoffs(figures, doc)
    if tradeoffs:
        plots["tradeoffs"] = tradeoffs
    for key, items, title in (
        ("effects", doc["flag_effects"], "flag effects over all valid trials (95% CI)"),
        ("ablation", doc["ablation"], "ablation: speedup of keeping each flag (95% CI)"),
    ):
        png = _intervals(figures, items, title)
        if png:
            plots[key] = png
    return plots


def _convergence(figures, doc: dict) -> str:
    """Every trial's speedup and the best so far, by unique build."""
    trials = doc["trials"]
    fig, ax = figures.subplots(figsize=(8, 3.6))
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


def _workloads(figures, doc: dict) -> str | None:
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
    fig, ax = figures.subplots(figsize=(8, 0.9 + 0.45 * len(rows) * max(1, len(doc["workloads"]))))
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


def _intervals(figures, items: list[dict], title: str) -> str | None:
    """Flag effects or ablation contributions with their 95% intervals (at most 12); None when none has an
    interval to draw (an open end: one run each, nothing decided; or no speedup)."""
    items = [i for i in items if i.get("speedup") is not None and None not in i["ci"]][:12]
    if not items:
        return None
    fig, ax = figures.subplots(figsize=(8, 0.6 + 0.35 * len(items)))
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
