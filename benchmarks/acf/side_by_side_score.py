"""Side by side, here, after a generation's GPU call: the times the engines are told, and the raw data kept.

    python side_by_side_score.py WORK G FILES RAW
FILES: the call's $OUT (builds.json, <kernel>.json from run_landscape.py). Writes WORK/gen<G>/times.json
({kernel: {"none": ms, sha256: median ms | null}}; null: ptxas failed, the cubin did not load or launch, or
its output differs from none's by a relative L2 error >= 1e-3) and copies the raw files to RAW/gen<G>/.
"""
import json
import os
import shutil
import statistics
import sys


def main():
    work, g, files, raw = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
    builds = json.load(open(os.path.join(files, "builds.json")))
    times = {}
    for k in sorted({r["kernel"] for r in builds}):
        T = json.load(open(os.path.join(files, k + ".json")))
        med = {s: statistics.median(x[1] for x in v["samples_ms"]) for s, v in T["variants"].items()
               if v["load"] == "ok" and v["error"] is not None and v["error"] < 1e-3 and v["samples_ms"]}
        t = {"none": med[T["none_sass"]]}
        for r in builds:
            if r["kernel"] == k and r["acf"] != "none":
                t[r["acf"]] = med.get(r.get("sass")) if r["status"] == 0 else None
        times[k] = t
        ok = [v for s, v in t.items() if s != "none" and v is not None]
        print("%-10s rounds %2d none %.4f ms  best x%.3f  median x%.3f  invalid %d of %d" % (
            k, T.get("rounds", 0), t["none"], t["none"] / min(ok), t["none"] / statistics.median(ok),
            sum(v is None for v in t.values()), len(t) - 1))
    gdir = os.path.join(raw, "gen%d" % g)
    os.makedirs(gdir, exist_ok=True)
    for f in os.listdir(files):
        if f.endswith(".json") or f.endswith(".txt") or f.endswith(".log"):
            shutil.copy(os.path.join(files, f), os.path.join(gdir, f))
    shutil.copy(os.path.join(work, "gen%d" % g, "asked.json"), os.path.join(gdir, "asked.json"))
    json.dump(times, open(os.path.join(gdir, "times.json"), "w"))
    json.dump(times, open(os.path.join(work, "gen%d" % g, "times.json.tmp"), "w"))
    os.replace(os.path.join(work, "gen%d" % g, "times.json.tmp"), os.path.join(work, "gen%d" % g, "times.json"))


if __name__ == "__main__":
    main()
