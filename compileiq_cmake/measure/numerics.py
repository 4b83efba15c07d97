"""Output comparison: the numbers a benchmark prints (on lines matching a regex) or writes to a file,
compared with the baseline build's within |x - ref| <= atol + rtol * |ref|."""

from __future__ import annotations

import math
import re
from pathlib import Path

from ..model.errors import MeasurementError
from ..model.reading import read_regular
from ..model.wording import plural

_NUMBER = re.compile(r"[-+]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|inf(?:inity)?)", re.IGNORECASE)


def extract_numbers(text: str, line_regex: str | None) -> tuple[float, ...]:
    """Every number on the lines matching line_regex (all lines when None). With capture groups in the
    regex, only the groups' text is read."""
    numbers: list[float] = []
    pattern = re.compile(line_regex) if line_regex else None
    for line in text.splitlines():
        if pattern is None:
            chunks = [line]
        else:
            m = pattern.search(line)
            if not m:
                continue
            chunks = [g for g in m.groups() if g is not None] if pattern.groups else [line]
        for chunk in chunks:
            numbers.extend(float(tok) for tok in _NUMBER.findall(chunk))
    return tuple(numbers)


COMPARE_FILE_MAX_BYTES = 1 << 30  # a --compare-file is read up to this many bytes (a link to /dev/zero ends)


def read_file_numbers(path: Path) -> tuple[float, ...] | str | None:
    """The numbers in the --compare-file a run wrote; None when it wrote none; else why it cannot be read in one
    line (a file that is not a regular one, one over COMPARE_FILE_MAX_BYTES): read as a regular file only and
    bounded by the bytes actually read (model.reading)."""
    if not path.exists() and not path.is_symlink():
        return None
    try:
        data = read_regular(path, COMPARE_FILE_MAX_BYTES, "", MeasurementError, "file of numbers")
    except MeasurementError as exc:
        return str(exc)
    return extract_numbers(data.decode("utf-8", errors="replace"), None)


def numerics_changed(reference: tuple[float, ...], values: tuple[float, ...], rtol: float, atol: float) -> str | None:
    """None when the values match the reference within tolerance, else the reason (one line)."""
    if len(values) != len(reference):
        return f"numerics changed: {plural(len(values), 'number')} in the output, the baseline's had {len(reference)}"
    worst_rel, worst_abs, bad = 0.0, 0.0, 0
    for ref, got in zip(reference, values, strict=False):
        if math.isnan(ref) and math.isnan(got):
            continue
        if not math.isfinite(got) and got != ref:
            return f"numerics changed: {got} where the baseline printed {ref}"
        diff = abs(got - ref)
        if diff > atol + rtol * abs(ref):
            bad += 1
        worst_abs = max(worst_abs, diff)
        if ref != 0:
            worst_rel = max(worst_rel, diff / abs(ref))
    if bad:
        if worst_rel > rtol:
            worst = f"relative error up to {worst_rel:.1e} (allowed: {rtol:.0e}"
        else:  # the numbers that differ are (near) zero in the baseline: only the absolute error says anything
            worst = f"absolute error up to {worst_abs:.1e} (allowed: {atol:.0e} + {rtol:.0e} x |baseline|"
        return f"numerics changed in {bad} of {plural(len(reference), 'number')}: {worst}, --rtol/--atol)"
    return None
