"""Side by side, on the GPU machine: one ptxas 13.3 compile per (kernel, control file) of the carry (and
"none"), 16 at a time, then the distinct cubins in the layout run_landscape.py times.

    python3 side_by_side_device.py CARRY TOOLKIT CUBINS OUT
TOOLKIT/bin holds ptxas 13.3 and cuobjdump. Writes CUBINS/<kernel>/<sass>.cubin, CUBINS/kernels.json and
OUT/builds.json (one record per compile: status, message, registers, spills, instructions, sass).
"""
import concurrent.futures as cf
import json
import os
import shutil
import sys
import time

from build_landscape import build_one


def main():
    carry, tk, cubins, out = sys.argv[1:5]
    manifest = json.load(open(os.path.join(carry, "manifest.json")))
    t0 = time.time()
    rows, kinfo = [], {}
    for k, m in manifest.items():
        kd = os.path.join("/tmp/sbs-build", k)
        os.makedirs(kd, exist_ok=True)
        ptx = os.path.join(carry, "ptx", k + ".ptx")
        jobs = [None] + [("default", s, os.path.abspath(os.path.join(carry, "acf", s + ".acf"))) for s in m["acfs"]]
        with cf.ThreadPoolExecutor(os.cpu_count() or 4) as ex:
            res = list(ex.map(lambda a: build_one(tk, k, ptx, m["entry_re"], a, kd), jobs))
        os.makedirs(os.path.join(cubins, k), exist_ok=True)
        seen = {}
        for rec, cubin in res:
            if rec["status"] == 0 and "sass" in rec:
                if rec["sass"] not in seen:
                    seen[rec["sass"]] = rec["acf"]
                    shutil.copy(cubin, os.path.join(cubins, k, rec["sass"] + ".cubin"))
                rec["measured_as"] = seen[rec["sass"]]
            rows.append(rec)
        none = res[0][0]
        kinfo[k] = dict(entry=none.get("entry"), none_sass=none.get("sass"), builds=len(res),
                        valid=sum(1 for r, _ in res if r["status"] == 0), distinct_sass=len(seen))
        print(k, kinfo[k], "%.0fs" % (time.time() - t0), flush=True)
    json.dump(kinfo, open(os.path.join(cubins, "kernels.json"), "w"))
    json.dump(rows, open(os.path.join(out, "builds.json"), "w"))


if __name__ == "__main__":
    main()
