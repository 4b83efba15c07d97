"""CompileIQ's own engine (ask/tell, its defaults: pool 32) on one kernel, with live GPU measurement.

Runs here in the compileiq venv as a background process; a file protocol hands each generation to
the GPU: it writes WORK/gen<i>/asked.json (param_id -> ACF sha256) and the ACFs (outside the repo),
then waits for WORK/gen<i>/scores.json (param_id -> median ms or "*" for invalid) and tells them.
Usage: CIQ_SEARCH_SPACES_DIR=... python ciq_live.py WORK GENERATIONS
"""
import hashlib
import json
import os
import sys
import time

from compileiq.ciq import Search
from compileiq.search_spaces.compilers import PtxasSearchSpace
from compileiq.types import SearchConfiguration, WorkerTypes
from compileiq.utils.helpers import save_compiler_config
from compileiq.utils.validation import Score


def main():
    work, gens = sys.argv[1], int(sys.argv[2])
    s = Search(objective_function=lambda p: 0.0,
               search_space=PtxasSearchSpace(version="13.3", variant="default"),
               search_config=SearchConfiguration(problem_type="min", generations=gens),
               worker_type=WorkerTypes.MANUAL)
    for g in range(gens):
        d = os.path.join(work, "gen%d" % g)
        os.makedirs(d, exist_ok=True)
        cands = s.ask()
        asked = {}
        for c in cands:
            h = c.params if isinstance(c.params, str) else list(c.params.values())[0]
            sha = hashlib.sha256(bytes.fromhex(h)).hexdigest()
            save_compiler_config(os.path.join(work, "acf", sha + ".acf"), h)
            asked[str(c.param_id)] = sha
        json.dump(asked, open(os.path.join(d, "asked.json.tmp"), "w"))
        os.rename(os.path.join(d, "asked.json.tmp"), os.path.join(d, "asked.json"))
        sp = os.path.join(d, "scores.json")
        while not os.path.exists(sp):
            time.sleep(0.5)
        time.sleep(0.2)
        sc = json.load(open(sp))
        s.tell([Score(score=sc[pid], param_id=pid, num_objectives=1) for pid in asked])
        print("generation", g, "told", len(asked), flush=True)
    print("done", flush=True)


if __name__ == "__main__":
    main()
