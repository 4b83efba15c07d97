"""Side by side, here: the carry of one generation (see side_by_side.py) for the GPU machine.

    python side_by_side_carry.py WORK G ACF_DIR BUILD_DIR CARRY
WORK/gen<G>/asked.json names the files of both searches; generation 0 adds the landscape's 160 "default"
files (ACF_DIR/acf_default.txt, the files in ACF_DIR/acf) for the random order, measured in the same call.
BUILD_DIR/<kernel>/<kernel>.ptx: the kernels' PTX from build_landscape.py (nvcc 13.3). CARRY (git-ignored,
replaced): ptx/, acf/ and manifest.json {kernel: {"entry_re", "acfs"}}.
"""
import json
import os
import shutil
import sys

from build_landscape import KERNELS


def main():
    work, g, acfdir, build, carry = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
    asked = json.load(open(os.path.join(work, "gen%d" % g, "asked.json")))
    landscape = []
    if g == 0:
        landscape = [l.split()[1] for l in open(os.path.join(acfdir, "acf_default.txt")) if l.strip()]
    if os.path.isdir(carry):
        shutil.rmtree(carry)
    os.makedirs(os.path.join(carry, "ptx"))
    os.makedirs(os.path.join(carry, "acf"))
    manifest = {}
    for k in asked["ciq"]:
        shas = sorted({s for m in asked.values() for seed in m[k].values() for s in seed} | set(landscape))
        for s in shas:
            src = os.path.join(work, "acf", s + ".acf")
            if not os.path.exists(src):
                src = os.path.join(acfdir, "acf", s + ".acf")
            dst = os.path.join(carry, "acf", s + ".acf")
            if not os.path.exists(dst):
                shutil.copy(src, dst)
        shutil.copy(os.path.join(build, k, k + ".ptx"), os.path.join(carry, "ptx", k + ".ptx"))
        manifest[k] = {"entry_re": KERNELS[k][2], "acfs": shas}
    json.dump(manifest, open(os.path.join(carry, "manifest.json"), "w"))
    print("generation", g, {k: len(v["acfs"]) for k, v in manifest.items()},
          "files", len(os.listdir(os.path.join(carry, "acf"))))


if __name__ == "__main__":
    main()
