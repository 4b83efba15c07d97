"""A suite's outcomes per target and the state file that keeps them while the suite is unfinished: a
finished target's outcome is kept beside the trial store with a stamp of the project's files (a change
since discards it), so a killed suite resumes without tuning its finished targets again."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..model.events import Log, as_stream
from ..model.records import TuneResult
from ..model.suite import Suite

STATE_VERSION = 1


@dataclass(frozen=True)
class TargetOutcome:
    """One target of a suite: what became of it."""

    target: str
    status: str  # "tuned" (an entry written), "unchanged" (its entry holds), "no gain", "failed", "skipped", "excluded"
    reason: str = ""
    speedup: float | None = None
    ci: tuple[float, float] | None = None
    flags: tuple[str, ...] = ()
    trials: int = 0
    seconds: float = 0.0
    allotted: float | None = None  # its share of the suite's time limit (None: no limit)
    language: str = ""
    resumed: bool = False  # kept from an earlier run of the same suite
    device_seconds: float = 0.0  # targets in flight together: the seconds its runs held a GPU (or the host)
    waited_seconds: float = 0.0  # seconds it waited for slots other targets held (not charged to its share)
    shared_seconds: float = 0.0  # seconds of the suite's shared setup it ran or waited for (the project's own
    # build read once, the pool's trees' first configures, the one baseline build; inside its setup, not charged)
    # where its seconds went, by phase (model.events.PHASES: setup, baseline, search, validation, ablation,
    # confirmation, publish; those it reached)
    stages: dict[str, float] = field(default_factory=dict)
    started: float = 0.0  # seconds after the suite's start when its tune began (the suite's overhead: none ran)
    objective: str = "time"  # what its speedup is: the metric's ("time") or joules per run ("energy": a gain)

    @staticmethod
    def of(target: str, result: TuneResult, seconds: float, allotted: float | None) -> TargetOutcome:
        w = result.winner
        if result.unchanged is not None:  # its entry holds: not tuned again
            speedup, flags = result.unchanged
            return TargetOutcome(
                target,
                "unchanged",
                result.notes[0] if result.notes else "",
                speedup,
                None,
                flags,
                0,
                seconds,
                allotted,
                result.language,
            )
        if w is None and result.needed:  # its runs make its share useless: its time went back at once
            return TargetOutcome(
                target,
                "skipped",
                result.notes[0] if result.notes else f"needs about {result.needed:.0f} s",
                trials=len(result.trials),
                seconds=seconds,
                allotted=allotted,
                language=result.language,
            )
        if w is None:
            return TargetOutcome(
                target,
                "no gain",
                "no flag set beat the project's own build significantly",
                trials=len(result.trials),
                seconds=seconds,
                allotted=allotted,
                language=result.language,
            )
        return TargetOutcome(
            target,
            "tuned",
            "",
            w.geomean_speedup,
            (w.geomean_ci_low, w.geomean_ci_high),
            tuple(w.flagset.flags),
            len(result.trials),
            seconds,
            allotted,
            result.language,
        )


def state_path(suite: Suite, build_dir: Path) -> Path:
    key = hashlib.sha256(str(suite.path).encode()).hexdigest()[:12]
    return build_dir / "compileiq" / f"suite-{key}.json"


def tree_stamp(source_dir: Path, skip: tuple[Path, ...], outputs: tuple[Path, ...] = ()) -> str:
    """A digest of every file's path, size and modification time under the project (build trees and .git
    left out): a resumed suite keeps its finished targets only when nothing changed since. `outputs`: the
    suite's own files (the TOML its targets write, by default in the source tree, with its lock and the
    temporary files of a write; the summary and report): never part of it, or a finished target's entry
    would read as a change of the project and a killed suite would forget its finished targets."""
    h = hashlib.sha256()
    skip_s = tuple(str(p) for p in skip)
    own = {p.resolve() for p in outputs} | {p.resolve().with_name(p.name + ".lock") for p in outputs}
    temporary = tuple(f".compileiq-{p.name}-" for p in outputs)  # results.toml_io's temporary files
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = sorted(d for d in dirs if d != ".git" and not str(Path(root) / d).startswith(skip_s))
        for name in sorted(files):
            if name.startswith(temporary) or (Path(root) / name).resolve() in own:
                continue
            try:
                st = (Path(root) / name).stat()
            except OSError:
                continue
            h.update(f"{Path(root, name).relative_to(source_dir)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _load_state(path: Path, stamp: str, log: Log) -> dict[str, TargetOutcome]:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    if doc.get("version") != STATE_VERSION:
        return {}
    if doc.get("stamp") != stamp:
        as_stream(log).note(
            "suite: the project changed since the earlier, unfinished run of this suite: its "
            "finished targets are tuned again (each tune's trial store decides what is reused)",
            stage="suite",
        )
        return {}
    out = {}
    for row in doc.get("finished", []):
        try:
            row = {**row, "ci": tuple(row["ci"]) if row.get("ci") else None, "flags": tuple(row.get("flags", ()))}
            out[row["target"]] = TargetOutcome(**row)
        except (TypeError, KeyError):
            continue
    return out


def _save_state(path: Path, finished: dict[str, TargetOutcome], stamp: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(
        json.dumps(
            {"version": STATE_VERSION, "stamp": stamp, "finished": [asdict(o) for o in finished.values()]}, indent=1
        )
    )
    os.replace(tmp, path)
