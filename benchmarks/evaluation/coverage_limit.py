#!/usr/bin/env python3
"""Issue 51: can a written interval both lie above 1 and cover a small true gain in 95% of the tunes that write it?

The normal model of one comparison: the estimate X (log speed-up over its standard error) is N(mu, 1), mu the
true gain in standard errors. A rule writes a winner when its interval's low end L(X) is above 0 (speed-up 1);
L increases with X, so a rule writes exactly when X > a, with L(a) = 0. Among the written tunes the interval
covers the truth when L(X) <= mu, i.e. a < X <= L^-1(mu) (the high end is far above, and misses there are
the rarer 2.5%). As mu goes to 0, L^-1(mu) goes to a and that share to 0, for every such rule: coverage among
what is written cannot stay at 95% down to a gain of 0. This prints, per rule, the share of tunes that write
and the coverage among them at gains of 0.25 to 5 standard errors, and per tune the chance of a written
interval whose low end is above the truth (what a user can bet on per tune):

  - "t-interval": L(X) = X - 1.96, the tune's form (the confirmation's interval, written when it excludes 1);
  - "wider k": L(X) = X - k: a wider interval buys coverage at small gains only by writing fewer winners;
  - "selective": the interval conditioned on the selection X > 1.96 (a post-selection, truncated-normal
    interval, exact 95% coverage among the tunes with X > 1.96), written only when its low end is above 0,
    as a written winner must be: that second selection (X > 3.23) covers less, not more, and writes fewer.

Usage: python3 benchmarks/evaluation/coverage_limit.py [--json FILE]   (about a second; scipy)
"""

from __future__ import annotations

import argparse
import json
import math

from scipy.optimize import brentq
from scipy.stats import norm

Z = norm.isf(0.025)  # 1.96: a two-sided 95% interval's half-width in standard errors
GAINS = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0)
WIDER = (2.576, 3.29)


def selective_low(x: float, cut: float) -> float:
    """The 95% interval's low end for mu given X = x and the selection X > cut (a truncated normal's 97.5% quantile
    inverted in mu); -inf in effect where x is at the cut."""

    def upper_tail(mu: float) -> float:
        return math.exp(norm.logsf(x - mu) - norm.logsf(cut - mu)) - 0.025

    lowest = -1e4
    return lowest if upper_tail(lowest) > 0 else brentq(upper_tail, lowest, x)


def shift_rule(k: float, mu: float) -> tuple[float, float, float]:
    """(share written, coverage among written, written and low end above the truth per tune) for L(X) = X - k."""
    written = norm.sf(k - mu)
    missed = norm.sf(k)  # X - k > mu
    return written, (written - missed) / written, missed


def selective_rule(mu: float) -> tuple[float, float, float]:
    """The same for the truncated-normal interval (selection X > Z), written when its low end is above 0."""
    a = brentq(lambda x: selective_low(x, Z), Z + 1e-6, 20.0)
    b = brentq(lambda x: selective_low(x, Z) - mu, a, 60.0)  # L(b) = mu: covered for a < X <= b
    written = norm.sf(a - mu)
    missed = norm.sf(b - mu)
    return written, (written - missed) / written, missed


def table() -> list[dict]:
    rows = []
    for mu in GAINS:
        row: dict = {"gain_se": mu, "t-interval": shift_rule(Z, mu)}
        for k in WIDER:
            row[f"wider {k}"] = shift_rule(k, mu)
        row["selective"] = selective_rule(mu)
        rows.append(row)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", help="write the table here as well")
    args = parser.parse_args()
    rows = table()
    rules = [k for k in rows[0] if k != "gain_se"]
    print("true gain (standard errors) | " + " | ".join(f"{r}: written, coverage, missed per tune" for r in rules))
    print("|".join(["---"] * (len(rules) + 1)))
    for row in rows:
        cells = [f"{row[r][0]:.1%}, {row[r][1]:.1%}, {row[r][2]:.2%}" for r in rules]
        print(f"{row['gain_se']:g} | " + " | ".join(cells))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"z": Z, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
