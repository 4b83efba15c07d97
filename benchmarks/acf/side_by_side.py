"""Side by side on the GPU: CompileIQ's own engine (its defaults: pool 32, ask/tell, told the kernel time) and
our Advanced Controls source (compileiq_cmake.flags.acf_compileiq.CompileIQSource with the tune's defaults:
16 candidates per generation, told the log ratio to the project's own build, as tune/acf_engine.py does), one
independent run of each per kernel and seed, the same generations in the same GPU calls. (Measured with the
source as of commit d95efe7, whose `sample` was the engine's first generation; since then it is a wide sample
of the space, which this comparison motivated: docs/benchmarks/acf.md.)

Runs here, in a Python with compileiq installed (NVIDIA's licence: nothing of it enters the repository), as
a background process that hands each generation to the GPU through files:
  WORK/gen<g>/asked.json   {"ciq"|"ours": {kernel: {seed: [sha256, ...]}}}, the files in WORK/acf/<sha>.acf
  WORK/gen<g>/times.json   {kernel: {"none": ms, sha256: ms | null (invalid)}}: written by side_by_side_score.py
then tells each engine its scores and asks for the next generation.

    CIQ_SEARCH_SPACES_DIR=... PYTHONPATH=<repo> python side_by_side.py WORK [--seeds 10] [--generations 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
import random
import time
from pathlib import Path

import numpy as np
from compileiq.ciq import Search
from compileiq.search_spaces.compilers import PtxasSearchSpace
from compileiq.types import SearchConfiguration, WorkerTypes
from compileiq.utils.validation import Score

from compileiq_cmake.flags.acf_compileiq import CompileIQSource

KERNELS = ("spill", "sgemm", "triad", "attn", "gemm_small")
OURS_POOL = 16  # compileiq_cmake.flags.acf.DEFAULT_CANDIDATES


def store(work: Path, data: bytes) -> str:
    sha = hashlib.sha256(data).hexdigest()
    path = work / "acf" / f"{sha}.acf"
    if not path.exists():
        path.write_bytes(data)
    return sha


class Theirs:
    """CompileIQ's engine with its defaults (pool from its own rule), told the raw time; invalid: "*"."""

    def __init__(self, generations: int) -> None:
        self.search = Search(objective_function=lambda p: 0.0,
                             search_space=PtxasSearchSpace(version="13.3", variant="default"),
                             search_config=SearchConfiguration(problem_type="min", generations=generations),
                             worker_type=WorkerTypes.MANUAL, disable_progress_bar=True)
        self.pending: list[tuple[object, bytes]] = []

    def ask(self) -> list[bytes]:
        self.pending = [(c.param_id, bytes.fromhex(str(c.params))) for c in self.search.ask()]
        return [d for _, d in self.pending]

    def tell(self, ms: dict[bytes, float | None]) -> None:
        rows = []
        for pid, data in self.pending:
            t = ms.get(data)
            rows.append(Score(score=t if t is not None else "*", param_id=pid, num_objectives=1))
        self.search.tell(rows)


class Ours:
    """The tune's own source: first generation `sample`, then ask/tell with log-ratio losses."""

    def __init__(self) -> None:
        self.source = CompileIQSource("13.3", "default", "ptxas", pool=OURS_POOL)
        self.started = False

    def ask(self) -> list[bytes]:
        if not self.started:
            self.started = True
            return self.source.sample(OURS_POOL)
        return self.source.ask(OURS_POOL)

    def tell(self, ms: dict[bytes, float | None], none_ms: float) -> None:
        self.source.tell({d: (math.log(t / none_ms) if t is not None else math.inf) for d, t in ms.items()})


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("work", type=Path)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--generations", type=int, default=3)
    ap.add_argument("--rng-seed", type=int, default=2026)
    args = ap.parse_args()
    random.seed(args.rng_seed)  # compileiq's sampling takes no seed: Python's and numpy's generators are seeded
    np.random.seed(args.rng_seed)
    (args.work / "acf").mkdir(parents=True, exist_ok=True)
    theirs = {k: [Theirs(args.generations) for _ in range(args.seeds)] for k in KERNELS}
    ours = {k: [Ours() for _ in range(args.seeds)] for k in KERNELS}
    for g in range(args.generations):
        gdir = args.work / f"gen{g}"
        gdir.mkdir(exist_ok=True)
        asked: dict[str, dict[str, dict[str, list[str]]]] = {"ciq": {}, "ours": {}}
        blobs: dict[str, bytes] = {}
        for k in KERNELS:
            for name, engines in (("ciq", theirs[k]), ("ours", ours[k])):
                per_seed = {}
                for s, eng in enumerate(engines):
                    files = eng.ask()
                    shas = [store(args.work, d) for d in files]
                    blobs.update(zip(shas, files))
                    per_seed[str(s)] = shas
                asked[name][k] = per_seed
        (gdir / "asked.json.tmp").write_text(json.dumps(asked))
        os.replace(gdir / "asked.json.tmp", gdir / "asked.json")
        print(f"generation {g}: asked", sum(len(v) for m in asked.values() for s in m.values() for v in s.values()),
              flush=True)
        times_path = gdir / "times.json"
        while not times_path.exists():
            time.sleep(1)
        times = json.loads(times_path.read_text())
        for k in KERNELS:
            ms = {blobs[sha]: t for sha, t in times[k].items() if sha in blobs}  # (not the landscape's files)
            for s in range(args.seeds):
                theirs[k][s].tell({blobs[sha]: ms.get(blobs[sha]) for sha in asked["ciq"][k][str(s)]})
                ours[k][s].tell({blobs[sha]: ms.get(blobs[sha]) for sha in asked["ours"][k][str(s)]},
                                times[k]["none"])
        print(f"generation {g}: told", flush=True)
    (args.work / "done").write_text("done\n")


if __name__ == "__main__":
    main()
