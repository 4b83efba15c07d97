"""The result of a suite (issue 24): one JSON document and one HTML page over its targets.

Schema "compileiq-suite/1":

    schema, tool_version, suite (the suite file), date, time_limit (null: none), wall_seconds
    targets: [{target, status, reason, speedup, ci: [low, high], flags, trials, seconds, allotted, language,
               resumed, device_seconds, waited_seconds, shared_seconds (the suite's shared setup, run or
               waited for: the project's own build read once, the pool's trees' first configures, the one
               baseline build; inside its setup, not charged), stages: {"setup", "baseline", "search", "validation",
               "ablation", "confirmation", "publish": seconds, those it reached}}]
               status: tuned | unchanged | no gain | failed | skipped | excluded; speedup and ci: the
               winner's interleaved re-measurement (null when no entry was written)
    geomean_speedup: over the targets tuned or without a gain (1.0 for those), null when none ran; only targets
               tuned for time (a target's objective: "time" or "energy", whose speedup is an energy gain)
    geomean_energy_gain: the same over the targets tuned with --objective energy (null: none); the table marks
               their gains with E
    wins (an entry written), ties (no significant gain), losses (failed or skipped: nothing learned)
    seconds: {target: seconds spent}
    overhead_seconds: the suite's own seconds (wall time while no target of this run was tuned)
    scheduling: {jobs, idle_share: {slot: share}, idle_share_queued: {slot: share}, busy_seconds: {slot: s},
               trees: {pool, lent_again, configures}, baseline_builds: [{tree, targets, built, ok, seconds, why}]}:
               targets in flight together; idle_share_queued (only when more targets than fit in flight): each
               GPU's idle share from the first run to the last target's start, while targets waited; trees:
               the variant trees the suite configured (its pool) and how many
               times one was lent to a target after another target's tune; baseline_builds: the suite's one
               build of its targets' baselines per configuration (targets: whose baselines it holds)
"""

from __future__ import annotations

import datetime as _dt
import math
from dataclasses import asdict

import jinja2

from .. import __version__
from ..model.wording import plural
from ..system.resources import templates_dir
from .summary import finite, write_whole

SCHEMA = "compileiq-suite/1"
__all__ = ["SCHEMA", "build", "render", "table", "write_whole"]


def build(suite, outcomes, time_limit: float | None, wall_seconds: float, shared: dict | None = None) -> dict:
    """The suite's document; `shared`: with targets in flight together, how many at a time and each GPU's
    (or the host's) busy seconds and idle share of the wall time."""
    rows = [{**asdict(o), "ci": list(o.ci) if o.ci else None, "flags": list(o.flags)} for o in outcomes]
    ran = [o for o in outcomes if o.status in ("tuned", "unchanged", "no gain")]

    def gains(objective: str) -> list[float]:
        return [
            o.speedup if o.status in ("tuned", "unchanged") and o.speedup else 1.0
            for o in ran
            if getattr(o, "objective", "time") == objective
        ]

    speedups, energy = gains("time"), gains("energy")  # an energy gain is no speedup: each its own mean
    return finite(
        {
            "schema": SCHEMA,
            "tool_version": __version__,
            "suite": str(suite.path),
            "date": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
            "time_limit": time_limit,
            "wall_seconds": round(wall_seconds, 3),
            "targets": rows,
            "geomean_speedup": math.exp(sum(math.log(s) for s in speedups) / len(speedups)) if speedups else None,
            "geomean_energy_gain": math.exp(sum(math.log(s) for s in energy) / len(energy)) if energy else None,
            "wins": sum(1 for o in outcomes if o.status in ("tuned", "unchanged")),
            "ties": sum(1 for o in outcomes if o.status == "no gain"),
            "losses": sum(1 for o in outcomes if o.status in ("failed", "skipped")),
            "seconds": {o.target: round(o.seconds, 3) for o in outcomes},
            "overhead_seconds": round(overhead_seconds(outcomes, wall_seconds), 3),
            "scheduling": shared or {"jobs": 1},
        }
    )


def overhead_seconds(outcomes, wall_seconds: float) -> float:
    """The suite's own seconds: its wall time while no target of this run was being tuned (reading the suite,
    the state, the shares, the summary and report; a target's setup counts as its own)."""
    spans = sorted(
        (o.started, o.started + o.seconds)
        for o in outcomes
        if not o.resumed and o.status not in ("excluded",) and o.seconds > 0
    )
    busy, end = 0.0, 0.0
    for a, b in spans:
        a = max(a, end)
        if b > a:
            busy += b - a
            end = b
    return max(0.0, wall_seconds - busy)


def table(doc: dict) -> list[str]:
    """The console's closing table of a suite."""
    lines = [
        "",
        f"suite: {len(doc['targets'])} targets in {doc['wall_seconds']:.1f} s"
        + (f" (--time-limit {doc['time_limit']:g} s)" if doc["time_limit"] else "")
        + f": {doc['wins']} tuned (or unchanged since their entry), {doc['ties']} without a gain, {doc['losses']} "
        "failed or skipped"
        + (f"; geometric mean speedup {doc['geomean_speedup']:.3f}x" if doc["geomean_speedup"] else "")
        + (
            f"; geometric mean energy gain {doc['geomean_energy_gain']:.3f}x (--objective energy)"
            if doc.get("geomean_energy_gain")
            else ""
        ),
        f"  {'target':<24} {'status':<9} {'speedup':>8}  {'trials':>6} {'seconds':>8}  flags / why",
    ]
    for t in doc["targets"]:
        speed = (f"{t['speedup']:.3f}x" + ("E" if t.get("objective") == "energy" else "")) if t["speedup"] else "-"
        why = " ".join(t["flags"]) if t["flags"] else t["reason"]
        lines.append(
            f"  {t['target']:<24} {t['status']:<9} {speed:>8}  {t['trials']:>6} {t['seconds']:>8.1f}  {why}"
            + ("  (earlier run)" if t["resumed"] else "")
        )
    lines.append(
        f"  the suite's own seconds (no target tuned): {doc.get('overhead_seconds', 0.0):.1f} of "
        f"{doc['wall_seconds']:.1f}"
    )
    sched = doc.get("scheduling") or {}
    if sched.get("idle_share"):
        idle = ", ".join(
            f"{'GPU ' + n[4:] if n.startswith('gpu:') else n} {100 * v:.0f}%" for n, v in sched["idle_share"].items()
        )
        lines.append(f"  {plural(sched['jobs'], 'target')} at a time; idle share of the wall time: {idle}")
    if sched.get("idle_share_queued"):
        queued = sched["idle_share_queued"]
        lines.append(
            f"  while targets waited for a place in flight (from the first run to the last target's start): the "
            f"GPUs idle {100 * sum(queued.values()) / len(queued):.0f}% on average"
        )
    if sched.get("trees"):
        lines.append(
            f"  variant trees: {sched['trees']['pool']} configured for the suite "
            f"({plural(sched['trees'].get('configures', 0), 'configure')} in this run), lent again "
            f"{plural(sched['trees']['lent_again'], 'time')} to a target after another's tune"
        )
    return lines


def render(doc: dict) -> str:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())), autoescape=True, undefined=jinja2.StrictUndefined
    )
    return env.get_template("suite_report.html.j2").render(doc=doc)
