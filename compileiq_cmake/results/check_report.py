"""`compileiq-cmake check`, how it reports: what was found per entry (`EntryCheck`), the gate's exit status,
the --json document and the findings as events of stage "check" (the command line's console prints them)."""

from __future__ import annotations

import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from ..model.events import EventStream


@dataclass
class EntryCheck:
    """What the check found for one entry of the file (and, with --remeasure, how it re-measured)."""

    target: str
    arch: str
    flags: list[str]
    applies: bool
    why: str  # the apply's own line: what it did or why not
    stale: list[str] = field(default_factory=list)  # why the entry may be out of date
    cpu: str = ""  # host-specific flags: the CPU tuned on and whether this host has its ISA features
    archs: str = ""  # CUDA: the measured and the unmeasured architectures the target builds
    # {benchmark, metric, lower_is_better, tree, note, rounds, speedup, ci, min_gain, passed, reason,
    #  workloads: [WorkloadResult]}; speedup, ci and min_gain are None when the tuned build's benchmark failed
    remeasure: dict | None = None
    # what differs on this machine from where the entry was tuned (driver, host compiler, clocks, ...)
    provenance: list[str] = field(default_factory=list)
    duplicate: str = ""  # another entry of its key (schema.duplicate_entries): the line that says so; none applies

    def failures(self, strict: bool) -> list[str]:
        """Why the gate fails: another entry of its key, a failed re-measure; with strict, not applying or stale."""
        out = [f"refused: {self.duplicate}"] if self.duplicate else []  # with or without strict
        out += [f"re-measured: {self.remeasure['reason']}"] if self.remeasure and not self.remeasure["passed"] else []
        if strict and not self.applies:
            out.append(f"does not apply: {self.why}")
        if strict:
            out += [f"stale: {s}" for s in self.stale]
        return out


def check_status(checks: list[EntryCheck], strict: bool = False) -> int:
    """The exit status: 1 when an entry has another of its key or a re-measured entry failed (with strict, also
    when an entry does not apply or is stale), else 0."""
    return 1 if any(c.failures(strict) for c in checks) else 0


def checks_document(checks: list[EntryCheck], strict: bool = False) -> dict:
    """`check --json`: the verdict and every entry with its failures."""
    return {
        "passed": not check_status(checks, strict),
        "strict": strict,
        "entries": [{**asdict(c), "failures": c.failures(strict)} for c in checks],
    }


def report_checks(checks: list[EntryCheck], events: EventStream, strict: bool = False) -> int:
    """The findings as events of stage "check" (per entry: whether it applies and why as a stage result, each
    stale reason as a warning, cpu and architectures as info, the re-measurement and each --strict failure as
    stage results); returns `check_status`."""
    for c in checks:
        where = f"{c.target} (sm_{c.arch})" if c.arch else c.target
        who: dict[str, Any] = {"target": c.target, "arch": c.arch}
        events.stage_result(
            "check",
            f"{where}: {'applies' if c.applies else 'does not apply'}: {c.why}",
            applies=c.applies,
            why=c.why,
            **who,
        )
        for s in c.stale:
            events.warning(f"{where}: stale: {s}", stage="check", stale=s, **who)
        if c.cpu:
            events.info(f"{where}: cpu: {c.cpu}", stage="check", cpu=c.cpu, **who)
        if c.archs:
            events.info(f"{where}: architectures: {c.archs}", stage="check", archs=c.archs, **who)
        for d in c.provenance:
            events.note(f"{where}: not as tuned: {d}", stage="check", provenance=d, **who)
        if c.remeasure is not None:
            r = c.remeasure
            per = ", ".join(
                f"'{w['workload']}' {w['speedup']:.4f}x [{w['ci'][0]:.4f}..{w['ci'][1]:.4f}]" for w in r["workloads"]
            )
            note = f"; {r['note']}" if r["note"] else ""
            events.stage_result(
                "check",
                f"{where}: re-measured with {shlex.join(r['benchmark'])} ({r['rounds']} "
                f"interleaved rounds{note}): {per + '; ' if per else ''}"
                f"{'PASS' if r['passed'] else 'FAIL'}: {r['reason']}",
                passed=r["passed"],
                speedup=r["speedup"],
                reason=r["reason"],
                **who,
            )
        for f in (f for f in c.failures(strict) if not f.startswith("re-measured: ")):
            mode = "" if f.startswith("refused: ") else " (--strict)"  # another entry of its key fails without it
            events.stage_result("check", f"{where}: FAIL{mode}: {f}", failure=f, **who)
    return check_status(checks, strict)
