#!/usr/bin/env python3
"""Compare two coverage JSON reports of the package (scripts/coverage.sh), e.g. before and after a
restructuring that moved modules: totals, functions with any line run, and the functions (by qualified
name, whatever module they now live in) that some test ran before and none runs after.

    python3 scripts/coverage_compare.py BEFORE.json AFTER.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def functions(report: dict) -> dict[str, bool]:
    """Qualified name -> whether any of its lines ran (a name in several modules: ran in any of them)."""
    out: dict[str, bool] = {}
    for data in report["files"].values():
        for name, fn in data.get("functions", {}).items():
            if name:  # "" is the module's top level
                out[name] = out.get(name, False) or fn["summary"]["covered_lines"] > 0
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: coverage_compare.py BEFORE.json AFTER.json", file=sys.stderr)
        return 2
    before, after = (json.loads(Path(p).read_text()) for p in argv)
    for label, report in (("before", before), ("after", after)):
        t = report["totals"]
        fns = functions(report)
        print(
            f"{label}: {t['percent_covered']:.1f}% of {t['num_statements']} statements ({t['covered_lines']}); "
            f"functions with any line run: {sum(fns.values())} of {len(fns)}"
        )
    fb, fa = functions(before), functions(after)
    gone = sorted(n for n, ran in fb.items() if ran and n not in fa)
    lost = sorted(n for n, ran in fb.items() if ran and n in fa and not fa[n])
    print(f"covered before, not run after: {len(lost)}" + "".join(f"\n  {n}" for n in lost))
    print(
        f"covered before, no such name after (renamed, split or removed): {len(gone)}"
        + "".join(f"\n  {n}" for n in gone)
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
