"""Build the ACF landscape on the CPU: PTX per kernel, then one ptxas 13.3 compile per (kernel, ACF).

Usage: python build_landscape.py TOOLKIT_ROOT ACF_DIR WORK_DIR CARRY_DIR RAW_DIR
  TOOLKIT_ROOT  CUDA 13.3 root (bin/nvcc, bin/ptxas, bin/cuobjdump)
  ACF_DIR       <sha256>.acf files plus acf_default.txt / acf_att.txt ("variant sha" lines); kept outside the repo
  WORK_DIR      scratch for ptx/cubins/sass (outside the repo)
  CARRY_DIR     git-ignored folder in the repo that travels to the GPU: distinct cubins + manifest
  RAW_DIR       committed raw data (builds.csv, kernels.json): ACFs named by sha256 only
Per cubin it records the ptxas exit status and message, registers, spill bytes and stack of the timed
entry (ptxas -v), and two SASS hashes of that entry from cuobjdump -sass: `sass` (addresses stripped,
encodings incl. scheduling bits kept: the dedup key) and `text` (instruction text only).
Identical `sass` -> one cubin is carried and timed.
"""
import concurrent.futures as cf
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", ".."))
BIGLIB = os.path.join(REPO, "benchmarks", "projects", "biglib")

# kernel name -> (source, extra nvcc flags, entry-name regex, ACF variants compiled for it)
KERNELS = {
    "spill": (os.path.join(HERE, "kernels", "spill.cu"), [], r"spill_mix", ["default"]),
    "sgemm": (os.path.join(HERE, "kernels", "sgemm.cu"), [], r"sgemm_tiled", ["default"]),
    "triad": (os.path.join(HERE, "kernels", "triad.cu"), [], r"triad_reduce", ["default"]),
    "attn": (os.path.join(HERE, "kernels", "attn.cu"), [], r"attn_fwd", ["default", "att"]),
    # the project's hottest biglib file, compiled unchanged; the timed entry is its fast path
    "gemm_small": (os.path.join(BIGLIB, "backend", "hot", "gemm_small.cu"),
                   ["-I" + os.path.join(BIGLIB, "backend", "include")], r"sgemm_kernelILb1E", ["default"]),
}

ADDR = re.compile(r"/\*[0-9a-f]{4,}\*/")
ENC = re.compile(r"/\* 0x[0-9a-f]{16} \*/")


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def parse_v(stderr, entry_re):
    """registers / spill stores / spill loads / stack of the entry matching entry_re."""
    cur, out = None, {}
    for line in stderr.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            cur = m.group(1)
            continue
        if cur and re.search(entry_re, cur):
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", line)
            if m:
                out.update(stack=int(m.group(1)), spill_st=int(m.group(2)), spill_ld=int(m.group(3)))
            m = re.search(r"Used (\d+) registers", line)
            if m:
                out["regs"] = int(m.group(1))
    return out


def sass_of(tk, cubin, entry_re):
    rc, so, se = run([os.path.join(tk, "bin", "cuobjdump"), "-sass", cubin])
    if rc:
        return None
    funcs, cur = {}, None
    for line in so.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            cur = m.group(1)
            funcs[cur] = []
        elif cur:
            funcs[cur].append(line)
    name = next(n for n in funcs if re.search(entry_re, n))
    lines = funcs[name]
    full = "\n".join(ADDR.sub("", l).strip() for l in lines)
    text = [ENC.sub("", ADDR.sub("", l)).strip() for l in lines]
    text = [t for t in text if t]
    ninstr = sum(1 for t in text if t.endswith(";"))
    return dict(entry=name, sass=hashlib.sha256(full.encode()).hexdigest()[:16],
                text=hashlib.sha256("\n".join(text).encode()).hexdigest()[:16], ninstr=ninstr)


def build_one(tk, kname, ptx, entry_re, acf, outdir):
    tag = "none" if acf is None else acf[1]
    cubin = os.path.join(outdir, tag + ".cubin")
    cmd = [os.path.join(tk, "bin", "ptxas"), "-arch=sm_90", "-O3", "-v", ptx, "-o", cubin]
    if acf is not None:
        cmd[1:1] = ["--apply-controls", acf[2]]
    rc, so, se = run(cmd)
    rec = dict(kernel=kname, acf=tag, space="-" if acf is None else acf[0], status=rc,
               message="" if rc == 0 else (se.strip().splitlines() or ["(no message)"])[-1][:200])
    if rc == 0 and os.path.exists(cubin):
        rec.update(parse_v(se, entry_re))
        s = sass_of(tk, cubin, entry_re)
        if s:
            rec.update(s)
    return rec, cubin


def main():
    tk, acfdir, work, carry, raw = sys.argv[1:6]
    acfs = {}
    for var in ("default", "att"):
        with open(os.path.join(acfdir, "acf_%s.txt" % var)) as f:
            acfs[var] = [(var, l.split()[1], os.path.join(acfdir, l.split()[1] + ".acf")) for l in f if l.strip()]
    os.makedirs(raw, exist_ok=True)
    rows, kinfo = [], {}
    if os.path.isdir(carry):
        shutil.rmtree(carry)
    for kname, (src, flags, entry_re, spaces) in KERNELS.items():
        kd = os.path.join(work, kname)
        os.makedirs(kd, exist_ok=True)
        ptx = os.path.join(kd, kname + ".ptx")
        rc, so, se = run([os.path.join(tk, "bin", "nvcc"), "-O3", "-arch=compute_90", "-ptx", *flags, src, "-o", ptx])
        assert rc == 0, se
        jobs = [None] + [a for v in spaces for a in acfs[v]]
        with cf.ThreadPoolExecutor(2) as ex:
            res = list(ex.map(lambda a: build_one(tk, kname, ptx, entry_re, a, kd), jobs))
        seen = {}
        os.makedirs(os.path.join(carry, kname), exist_ok=True)
        for rec, cubin in res:
            if rec["status"] == 0 and "sass" in rec:
                if rec["sass"] not in seen:
                    seen[rec["sass"]] = rec["acf"]
                    shutil.copy(cubin, os.path.join(carry, kname, rec["sass"] + ".cubin"))
                rec["measured_as"] = seen[rec["sass"]]
            rows.append(rec)
        none = res[0][0]
        kinfo[kname] = dict(source=os.path.relpath(src, REPO), nvcc_flags=["-O3", "-arch=compute_90", "-ptx", *[
            f if not f.startswith("-I") else "-I" + os.path.relpath(f[2:], REPO) for f in flags]],
            ptxas_flags=["-arch=sm_90", "-O3", "-v"], entry=none.get("entry"), none_sass=none.get("sass"),
            builds=len(res), valid=sum(1 for r, _ in res if r["status"] == 0), distinct_sass=len(seen),
            ptx_sha256=hashlib.sha256(open(ptx, "rb").read()).hexdigest())
        print(kname, kinfo[kname]["builds"], "builds", kinfo[kname]["valid"], "valid", len(seen), "distinct SASS",
              "none regs", none.get("regs"), "spill", none.get("spill_st"), flush=True)
    cols = ["kernel", "acf", "space", "status", "message", "regs", "spill_st", "spill_ld", "stack", "ninstr",
            "sass", "text", "measured_as"]
    with open(os.path.join(raw, "builds.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, cols, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(raw, "kernels.json"), "w") as f:
        json.dump(kinfo, f, indent=1)
    with open(os.path.join(carry, "kernels.json"), "w") as f:
        json.dump(kinfo, f, indent=1)


if __name__ == "__main__":
    main()
