"""Issue 54: where the search loop's time goes, trial by trial. Runs one `compileiq-cmake` command in this
process with the conveyor's events timed (execute/pipeline.py: a trial submitted, its build started and ended,
its wait for a GPU, its runs started and ended, the driver taking it back; the driver's work between two
trials), writes them as JSON lines, and summarises how much of the search loop had a build beside a run.

    python3 benchmarks/evaluation/pipeline_trace.py --trace trace.jsonl -- tune -S ... -B ... --target T ...
    python3 benchmarks/evaluation/pipeline_trace.py --summary trace.jsonl
    COMPILEIQ_REPLAY_PACE=6.5 python3 benchmarks/evaluation/pipeline_trace.py --trace t.jsonl --build-seconds 1.9 \
        -- tune --replay benchmarks/landscapes/attn_decode_f16.json --workers 2 ...   (the conveyor without a GPU)

`--build-seconds S`: a replay's builds (instant otherwise) take S seconds each, so that the conveyor can be
watched with a GPU trial's build and run times on this machine (COMPILEIQ_REPLAY_PACE sets the runs').

The product is not changed: the events are taken by wrapping the conveyor's methods in this process only.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import threading
import time
from pathlib import Path


def _slow_builds(build_seconds: float) -> None:
    from compileiq_cmake.execute import replay

    replayed = replay.ReplayRunner.build

    def slow_build(self, tree, flagset):
        time.sleep(build_seconds)
        return dataclasses.replace(replayed(self, tree, flagset), seconds=build_seconds)

    replay.ReplayRunner.build = slow_build


def _recorder(path: Path):
    out = path.open("w")
    lock = threading.Lock()
    t0 = time.perf_counter()

    def event(kind: str, index: int | None, **more) -> None:
        with lock:
            record = {"t": round(time.perf_counter() - t0, 4), "event": kind, "trial": index, **more}
            out.write(json.dumps(record) + "\n")
            out.flush()

    return event


def _install(path: Path, build_seconds: float = 0.0) -> None:
    if build_seconds > 0:
        _slow_builds(build_seconds)
    event = _recorder(path)
    _wrap_conveyor(event)
    _wrap_stages(event)


def _wrap_conveyor(event) -> None:
    from compileiq_cmake.execute import pipeline as conveyor

    P = conveyor.Pipeline
    built, free_runner, measure_on, nxt, submit = P._built, P._free_runner, P._measure_on_free_gpu, P.next, P.submit

    def _built(self, job, start):
        event("build_start", job.index, tree=job.tree.path.name)
        result = built(self, job, start)
        event("build_end", job.index, ok=result.ok, seconds=round(result.seconds, 3))
        return result

    def _free_runner(self, job):
        runner = free_runner(self, job)
        event("gpu_taken", job.index)
        return runner

    def _measure_on_free_gpu(self, job, build, known):
        event("gpu_wait", job.index)
        try:
            return measure_on(self, job, build, known)
        finally:
            event("runs_end", job.index)

    def _next(self):
        event("driver_waits", self._jobs[0].index if self._jobs else None)
        done = nxt(self)
        event("driver_takes", done.index)
        return done

    def _submit(self, index, flagset, known):
        event("submit", index, free_trees=len(self._free_trees))
        return submit(self, index, flagset, known)

    P._built, P._free_runner, P._measure_on_free_gpu, P.next, P.submit = (
        _built,
        _free_runner,
        _measure_on_free_gpu,
        _next,
        _submit,
    )


def _wrap_stages(event) -> None:
    from compileiq_cmake.tune import bank, search_loop

    finished = search_loop.SearchLoop._finished

    def _finished(self, state, pipeline):
        event("finished_begin", None)
        try:
            return finished(self, state, pipeline)
        finally:
            event("finished_end", None)

    search_loop.SearchLoop._finished = _finished
    validate = bank.Bank.validate

    def _validate(self, trial, trials):
        event("bank_begin", trial.index)
        try:
            return validate(self, trial, trials)
        finally:
            event("bank_end", trial.index)

    bank.Bank.validate = _validate


def _union(intervals: list[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for a, b in sorted(intervals):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], b))
        else:
            merged.append((a, b))
    return merged


def _length(intervals: list[tuple[float, float]]) -> float:
    return sum(b - a for a, b in intervals)


def _intersect(xs: list[tuple[float, float]], ys: list[tuple[float, float]]) -> float:
    return sum(max(0.0, min(b, d) - max(a, c)) for a, b in xs for c, d in ys)


def summary(path: Path) -> dict:
    """Seconds of the loop (first submit to last take) with a build, with a trial's runs, with both, with the
    bank validating a win (its rounds on the GPU, nothing in flight), with none of these."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    starts: dict[tuple[str, int], float] = {}
    builds, runs, driver, banked = [], [], [], []
    for e in events:
        key = e["trial"]
        if e["event"] in ("build_start", "gpu_taken", "finished_begin", "bank_begin"):
            starts[(e["event"], key)] = e["t"]
        elif e["event"] == "build_end" and ("build_start", key) in starts:
            builds.append((starts.pop(("build_start", key)), e["t"]))
        elif e["event"] == "runs_end" and ("gpu_taken", key) in starts:
            runs.append((starts.pop(("gpu_taken", key)), e["t"]))
        elif e["event"] == "finished_end" and ("finished_begin", key) in starts:
            driver.append((starts.pop(("finished_begin", key)), e["t"]))
        elif e["event"] == "bank_end" and ("bank_begin", key) in starts:
            banked.append((starts.pop(("bank_begin", key)), e["t"]))
    first = min((e["t"] for e in events if e["event"] == "submit"), default=0.0)
    # the loop ends at the driver's last take, or after a bank's validation that came after it
    last = max((e["t"] for e in events if e["event"] in ("driver_takes", "bank_end")), default=first)
    b, r = _union(builds), _union(runs)
    both = _intersect(b, r)
    loop = last - first
    return {
        "loop_seconds": round(loop, 2),
        "trials_built": len(builds),
        "trials_run": len(runs),
        "build_seconds": round(_length(b), 2),
        "run_seconds": round(_length(r), 2),
        "build_beside_run_seconds": round(both, 2),
        "bank_validation_seconds": round(_length(banked), 2),
        "neither_seconds": round(loop - _length(_union(builds + runs + banked)), 2),
        "most_builds_at_once": _most_at_once(builds),
    }


def _most_at_once(intervals: list[tuple[float, float]]) -> int:
    edges = sorted([(a, 1) for a, _ in intervals] + [(b, -1) for _, b in intervals])
    most = now = 0
    for _, step in edges:
        now += step
        most = max(most, now)
    return most


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trace", type=Path, help="write the events here and run the command after --")
    parser.add_argument("--summary", type=Path, help="summarise a trace written before")
    parser.add_argument("--build-seconds", type=float, default=0.0, help="a replay's builds take this long")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    if args.summary is not None:
        print(json.dumps(summary(args.summary), indent=1))
        return 0
    if args.trace is None or not args.command:
        parser.error("--trace FILE -- <compileiq-cmake arguments>, or --summary FILE")
    command = args.command[1:] if args.command[0] == "--" else args.command
    _install(args.trace, args.build_seconds)
    from compileiq_cmake.ui.cli import main as cli

    rc = cli(command)
    print(json.dumps(summary(args.trace)), file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
