"""Sample ptxas 13.3 ACF candidates with a locally installed compileiq (run in its venv).

Usage: CIQ_SEARCH_SPACES_DIR=<offline dir> python sample_acfs.py VARIANT N OUTDIR
Writes OUTDIR/<sha256>.acf and prints one line "<variant> <sha256>" per file.
compileiq and its outputs are NVIDIA-proprietary: keep OUTDIR outside the repository.
"""
import hashlib
import os
import sys

from compileiq.ciq import Search
from compileiq.search_spaces.compilers import PtxasSearchSpace
from compileiq.types import SearchConfiguration  # noqa: F401 (location checked at runtime)
from compileiq.utils.helpers import save_compiler_config


def main():
    variant, n, outdir = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    os.makedirs(outdir, exist_ok=True)
    s = Search(objective_function=lambda p: 0.0,
               search_space=PtxasSearchSpace(version="13.3", variant=variant),
               search_config=SearchConfiguration(problem_type="min", generations=1, pool_size=max(n, 6)))
    got = s.sample(n)
    for h in got:
        if isinstance(h, dict):
            h = list(h.values())[0]
        blob = bytes.fromhex(h)
        sha = hashlib.sha256(blob).hexdigest()
        save_compiler_config(os.path.join(outdir, sha + ".acf"), h)
        print(variant, sha)


if __name__ == "__main__":
    main()
