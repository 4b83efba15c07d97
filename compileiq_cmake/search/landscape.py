"""Recorded flag landscapes (benchmarks/landscapes/*.json; format in benchmarks/landscapes/README.md):
every point of a flag (sub-)space with its device-code fingerprint, correctness verdict and timing samples,
so that a search can be replayed without building or running anything.

`Landscape.load(path)` validates the file (a malformed one raises a one-line CompileIQError);
`lookup(flags)` maps a flag set to its point (None when the flags are outside the landscape);
`best_valid()` is the point a search should reach; `noise` is the relative standard deviation of one
timing sample, measured while recording (two passes per unique code)."""

from __future__ import annotations

import math
import re
import statistics
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..flags.space import Dimension, FlagSpace, numerics_traits, rule_tokens
from ..model.errors import CompileIQError, UsageError
from ..system.json_files import load_json

FORMAT = "compileiq-landscape"
SUPPORTED_VERSIONS = (1,)
STATUSES = ("ok", "wrong_result", "build_failed", "launch_failed", "untimed")


@dataclass(frozen=True)
class LandscapeCode:
    """One unique device code (or one kind of build failure) of a landscape."""

    id: int
    digest: str | None
    status: str  # "ok" | "wrong_result" | "build_failed" | "launch_failed" | "untimed"
    valid: bool
    time_us: tuple[float, ...]  # samples: one median-of-launches per pass (may be empty if not timed)
    error: float | None = None  # relative L2 error of the output vs the default build's
    registers: int | None = None
    spill_bytes: int | None = None
    message: str = ""

    @property
    def median_us(self) -> float | None:
        return float(statistics.median(self.time_us)) if self.time_us else None


@dataclass(frozen=True)
class LandscapePoint:
    choices: tuple[int, ...]  # value index per landscape dimension (0 = default)
    flags: tuple[str, ...]  # the point's tokens, in dimension order
    code: LandscapeCode
    speedup_samples: tuple[float, ...]  # default median time / each time sample (empty if not timed)
    noise: float  # the landscape's per-sample relative standard deviation
    default_time_us: float  # the default point's median time

    @property
    def valid(self) -> bool:
        return self.code.valid

    @property
    def status(self) -> str:
        return self.code.status

    @property
    def digest(self) -> str | None:
        return self.code.digest

    @property
    def time_us(self) -> tuple[float, ...]:
        return self.code.time_us

    @property
    def speedup(self) -> float:
        """Default median time / this point's median time (> 1: faster); 0.0 when not valid or not timed."""
        median = self.code.median_us
        if not self.code.valid or not self.speedup_samples or median is None:
            return 0.0
        return float(self.default_time_us / median)


def _fail(source: str, what: str) -> CompileIQError:
    return CompileIQError(f"landscape {source}: {what}")


def _as_int(value: Any, source: str, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(source, f"{what} must be an integer, got {value!r}")
    return value


def _header(doc: Mapping[str, Any], source: str) -> dict[str, Any]:
    """A landscape document's format, version and meta checked; its meta."""
    if not isinstance(doc, Mapping):
        raise _fail(source, "the top level must be a JSON object")
    if doc.get("format") != FORMAT:
        raise _fail(source, f"not a landscape file (format must be '{FORMAT}')")
    if doc.get("version") not in SUPPORTED_VERSIONS:
        raise _fail(source, f"unsupported version {doc.get('version')!r} (supported: {SUPPORTED_VERSIONS})")
    meta = doc.get("meta", {})
    if not isinstance(meta, Mapping):
        raise _fail(source, "meta must be an object")
    if meta.get("dry_run"):
        raise _fail(source, "a dry-run file (no timings); record it on a GPU without --dry-run")
    return dict(meta)


def _values(src: str, d: Mapping[str, Any], tokens: set[str]) -> tuple[tuple[str, ...], ...]:
    """A dimension's values checked: lists of flag tokens, the empty default first, no token in two values
    (`tokens`: those of the dimensions read before, added to)."""
    values = []
    for v in d["values"]:
        if not isinstance(v, list) or not all(isinstance(t, str) and t.strip() == t and t for t in v):
            raise _fail(src, f"dimension {d['name']}: each value must be a list of flag tokens")
        values.append(tuple(v))
    if len(values) < 2 or values[0] != ():
        raise _fail(src, f"dimension {d['name']}: values must start with the default [] and have 2 or more")
    for v in values[1:]:
        if not v:
            raise _fail(src, f"dimension {d['name']}: only the first value may be empty")
        for t in v:
            if t in tokens:
                raise _fail(src, f"flag token {t} appears in two values")
            tokens.add(t)
    return tuple(values)


def _code(src: str, k: int, c: Any) -> LandscapeCode:
    """Code `k` of a landscape, checked."""
    if not isinstance(c, Mapping):
        raise _fail(src, f"code {k} must be an object")
    status = c.get("status")
    if status not in STATUSES:
        raise _fail(src, f"code {k}: status {status!r} is not one of {', '.join(STATUSES)}")
    valid = c.get("valid")
    if not isinstance(valid, bool) or valid != (status == "ok"):
        raise _fail(src, f"code {k}: valid must be true exactly when status is 'ok'")
    times = c.get("time_us", [])
    if not isinstance(times, list) or not all(
        isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t) and t > 0 for t in times
    ):
        raise _fail(src, f"code {k}: time_us must be a list of positive numbers")
    if valid and not times:
        raise _fail(src, f"code {k}: a valid code needs at least one time sample")
    digest = c.get("digest")
    if digest is not None and not isinstance(digest, str):
        raise _fail(src, f"code {k}: digest must be a string or null")
    if status != "build_failed" and not digest:
        raise _fail(src, f"code {k}: only a build failure may lack a digest")
    error = c.get("error")
    if error is not None and (isinstance(error, bool) or not isinstance(error, (int, float))):
        raise _fail(src, f"code {k}: error must be a number or null")
    return LandscapeCode(
        id=k,
        digest=digest,
        status=status,
        valid=valid,
        time_us=tuple(float(t) for t in times),
        error=None if error is None else float(error),
        registers=c.get("regs"),
        spill_bytes=c.get("spill"),
        message=str(c.get("message", "")),
    )


class Landscape:
    def __init__(self, doc: Mapping[str, Any], source: str = "<dict>"):
        self.source = source
        self.meta: dict = _header(doc, source)
        self.kernel: str = str(doc.get("kernel", ""))
        self.family: str = str(doc.get("family", "nvcc"))
        metric = doc.get("metric", {"name": "kernel_time", "unit": "us", "higher_is_better": False})
        if not isinstance(metric, Mapping) or metric.get("unit") != "us" or metric.get("higher_is_better", False):
            raise _fail(source, "metric must be a time in 'us' with higher_is_better false")
        self.metric = dict(metric)
        self.dimensions: tuple[Dimension, ...] = self._read_dimensions(doc.get("dimensions"))
        self.codes: tuple[LandscapeCode, ...] = self._read_codes(doc.get("codes"))
        self._points: dict[tuple[int, ...], int] = self._read_points(doc.get("points"))
        default_choice = tuple([0] * len(self.dimensions))
        if default_choice not in self._points:
            raise _fail(source, "the default point (all choices 0) is missing")
        default_code = self.codes[self._points[default_choice]]
        if "default_code" in doc and doc["default_code"] != default_code.id:
            raise _fail(source, f"default_code {doc['default_code']!r} is not the code of the default point")
        default_us = default_code.median_us
        if not default_code.valid or default_us is None:
            raise _fail(source, "the default point must be valid and timed")
        self._default_us: float = default_us
        noise = self.meta.get("noise", {})
        rel_sd = noise.get("rel_sd") if isinstance(noise, Mapping) else None
        if isinstance(rel_sd, bool) or not isinstance(rel_sd, (int, float)) or not math.isfinite(rel_sd) or rel_sd < 0:
            raise _fail(source, "meta.noise.rel_sd (relative standard deviation of one sample) is missing or invalid")
        self.noise: float = float(rel_sd)
        self._by_tokens = {
            tok: (d, i) for d, dim in enumerate(self.dimensions) for i, v in enumerate(dim.values) for tok in v
        }
        self._ignored = self._rule_tokens()

    # ---- reading
    def _read_dimensions(self, raw: Any) -> tuple[Dimension, ...]:
        src = self.source
        if not isinstance(raw, list) or not raw:
            raise _fail(src, "dimensions must be a non-empty list")
        dims, names = [], set()
        tokens: set[str] = set()
        catalogue = numerics_traits(self.family)  # the traits a dimension does not state itself
        for k, d in enumerate(raw):
            if (
                not isinstance(d, Mapping)
                or not isinstance(d.get("name"), str)
                or not isinstance(d.get("values"), list)
            ):
                raise _fail(src, f"dimension {k} needs a name and a list of values")
            if d["name"] in names:
                raise _fail(src, f"dimension {d['name']} appears twice")
            names.add(d["name"])
            values = _values(src, d, tokens)
            # a per-file dimension "<file>:<name>" (record_project.py) has the traits of the catalogue's <name>
            traits = list(catalogue.get(d["name"], catalogue.get(d["name"].rpartition(":")[2], (False, False))))
            for k, key in enumerate(("unsafe_numerics", "relaxes_numerics")):  # optional; default: catalogue
                if key in d:
                    if not isinstance(d[key], bool):
                        raise _fail(src, f"dimension {d['name']}: {key} must be true or false")
                    traits[k] = d[key]
            dims.append(
                Dimension(
                    name=d["name"],
                    help=str(d.get("help", "")),
                    values=values,
                    unsafe_numerics=traits[0],
                    relaxes_numerics=traits[1],
                )
            )
        return tuple(dims)

    def _read_codes(self, raw: Any) -> tuple[LandscapeCode, ...]:
        src = self.source
        if not isinstance(raw, list) or not raw:
            raise _fail(src, "codes must be a non-empty list")
        return tuple(_code(src, k, c) for k, c in enumerate(raw))

    def _read_points(self, raw: Any) -> dict[tuple[int, ...], int]:
        src = self.source
        if not isinstance(raw, list) or not raw:
            raise _fail(src, "points must be a non-empty list")
        nd = len(self.dimensions)
        out: dict[tuple[int, ...], int] = {}
        for k, row in enumerate(raw):
            if not isinstance(row, list) or len(row) != nd + 1:
                raise _fail(src, f"point {k} must be a list of {nd} choice indices and a code id")
            for j, i in enumerate(row[:nd]):
                if not 0 <= _as_int(i, src, f"point {k} choice {j}") < len(self.dimensions[j].values):
                    raise _fail(src, f"point {k}: choice {i} out of range for dimension {self.dimensions[j].name}")
            code = _as_int(row[-1], src, f"point {k} code id")
            if not 0 <= code < len(self.codes):
                raise _fail(src, f"point {k}: code id {code} out of range (0..{len(self.codes) - 1})")
            key = tuple(row[:nd])
            if key in out:
                raise _fail(src, f"point {k} appears twice")
            out[key] = code
        return out

    def _rule_tokens(self) -> frozenset[str]:
        try:
            return rule_tokens(self.family)
        except (OSError, KeyError, ValueError):
            return frozenset()

    # ---- construction
    @classmethod
    def load(cls, path: Path | str) -> Landscape:
        path = Path(path)
        try:
            doc = load_json(path, str(path))
        except UsageError as exc:
            raise _fail(str(path), str(exc).removeprefix(f"{path}: ")) from None
        if not isinstance(doc, Mapping):
            raise _fail(str(path), "the top level must be a JSON object")
        return cls(doc, source=str(path))

    # ---- views
    @property
    def synthetic(self) -> bool:
        return bool(self.meta.get("synthetic", False))

    @property
    def compiler_version(self) -> str:
        """The recording compiler's version ("13.0.88"), from meta nvcc_version / compiler_version as the
        recorders wrote it (a version string, or nvcc's --version lines); "0" when none is recorded."""
        for key in ("nvcc_version", "compiler_version"):
            raw = self.meta.get(key)
            text = " ".join(map(str, raw)) if isinstance(raw, list) else str(raw or "")
            found = re.search(r"(?<![\d.])(\d+\.\d+(?:\.\d+)?)", text)
            if found:
                return found.group(1)
        return "0"

    @property
    def default_time_us(self) -> float:
        return self._default_us

    def space(self) -> FlagSpace:
        """The landscape's dimensions as a FlagSpace (a search over exactly the recorded points)."""
        return FlagSpace(family=self.family, dimensions=self.dimensions)

    def __len__(self) -> int:
        return len(self._points)

    @property
    def complete(self) -> bool:
        """True when every point of the product space is recorded (no sampling)."""
        return len(self._points) == math.prod(len(d.values) for d in self.dimensions)

    def _make_point(self, choices: tuple[int, ...], code_id: int) -> LandscapePoint:
        code = self.codes[code_id]
        flags = tuple(t for d, i in zip(self.dimensions, choices, strict=False) for t in d.values[i])
        samples = tuple(self._default_us / t for t in code.time_us)
        return LandscapePoint(
            choices=choices,
            flags=flags,
            code=code,
            speedup_samples=samples,
            noise=self.noise,
            default_time_us=self._default_us,
        )

    def points(self) -> Iterator[LandscapePoint]:
        for choices, code in self._points.items():
            yield self._make_point(choices, code)

    def point(self, choices: tuple[int, ...] | Mapping[str, int]) -> LandscapePoint | None:
        """The point of these choices (value indices per dimension, or {dimension name: index})."""
        if isinstance(choices, Mapping):
            unknown = set(choices) - {d.name for d in self.dimensions}
            if unknown and any(choices[n] for n in unknown):
                return None
            choices = tuple(int(choices.get(d.name, 0)) for d in self.dimensions)
        key = tuple(choices)
        code = self._points.get(key)
        return None if code is None else self._make_point(key, code)

    @property
    def default(self) -> LandscapePoint:
        return self.point(tuple([0] * len(self.dimensions)))  # type: ignore[return-value]

    def choices_for(self, flags: Any) -> tuple[int, ...] | None:
        """Value index per dimension for these flag tokens (a tuple, list or FlagSet), or None when a token
        is not part of the landscape. Order and duplicates do not matter; tokens that only the family's
        interaction rules add are ignored."""
        tokens = list(dict.fromkeys(getattr(flags, "flags", flags)))
        choice = [0] * len(self.dimensions)
        remaining = [t for t in tokens if t not in self._ignored or t in self._by_tokens]
        for d, dim in enumerate(self.dimensions):
            best = 0
            for i, v in enumerate(dim.values[1:], start=1):
                if all(t in remaining for t in v) and len(v) > len(dim.values[best]):
                    best = i
            if best:
                choice[d] = best
                for t in dim.values[best]:
                    remaining.remove(t)
        if remaining:
            return None
        return tuple(choice)

    def lookup(self, flags: Any) -> LandscapePoint | None:
        """The recorded point of these flags; None when they are outside the landscape (an unknown token,
        or a combination that a sampled landscape did not record)."""
        choices = self.choices_for(flags)
        return None if choices is None else self.point(choices)

    def best_valid(self) -> LandscapePoint:
        """The valid point of highest median speedup (ties: fewest flags, then lowest choices)."""
        best: LandscapePoint | None = None
        for p in self.points():
            if not p.valid:
                continue
            if best is None or (p.speedup, -len(p.flags), tuple(-c for c in p.choices)) > (
                best.speedup,
                -len(best.flags),
                tuple(-c for c in best.choices),
            ):
                best = p
        assert best is not None  # the default point is valid
        return best

    def unique_codes(self, valid_only: bool = False) -> int:
        return sum(1 for c in self.codes if c.digest and (c.valid or not valid_only))

    def describe(self) -> str:
        kind = "SYNTHETIC landscape" if self.synthetic else "recorded landscape"
        gpu = (self.meta.get("gpu") or {}).get("name") or "no GPU"
        best = self.best_valid()
        return (
            f"{kind} {self.kernel or self.source} ({gpu}): {len(self)} points, {self.unique_codes()} codes, "
            f"best valid {best.speedup:.3f}x, noise {100 * self.noise:.2f}%"
        )
