"""The learned prior (issue 23): from a target's features (flags/features.py), a flag value and the
architecture to the predicted effect of that value alone on the target's time, with its uncertainty, and the
probability that the build or run is invalid.

The model is a similarity-weighted average over *observations*: recorded kernels and finished tunes, each a
feature vector with the measured single-value effects (log speedup of the value alone over the default
build; invalid when it failed to build, run or verify). For a new target and a value v:

    w_k       = exp(-d_k^2 / (2 h^2))        d_k^2: mean squared standardized distance over the chosen features
    effect    = (sum_k w_k y_k + s * ybar_v) / (sum_k w_k + s)     over the observations with a valid y for v
    sd^2      = (sum_k w_k (y_k - effect)^2 + s * var_v) / (sum_k w_k + s) + floor^2
    p_invalid = (sum_k w_k inv_k + s * pbar_v) / (sum_k w_k + s)

ybar_v, var_v, pbar_v: the value's mean effect, variance and (smoothed) invalid rate over every observation of
its family; s (shrink) pulls thinly supported predictions towards them. The bandwidth h, s and the feature
subset are chosen by leave-one-out over the observations (`fit`, forward selection); another architecture
than the observations' widens sd by ARCH_WIDEN, and where some observations are of the tuned architecture the
others weigh OTHER_ARCH_WEIGHT. Pure numpy, no pickle: the model is its observations and
hyper-parameters in a versioned JSON file (`prior_data.json` in this package, made by
benchmarks/evaluation/prior_train.py),
plus the user's own tunes (results/prior_store.py). Inference is a few small matrix products.

An Advanced Controls file is opaque and one tune's own (a content-addressed path in its state), so the prior
learns the dimension, not the file (issue 52): every ptxas control file is the one value "a ptxas control
file" of `apply_controls` (nvcc's the same), a tune records the best effect one of its files had alone, and
a new kernel's prediction says how much a control file helped kernels like it: every candidate gets it (their
place among the singles), none enters the prior's combinations (which file would it be)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..flags.acf import ACF_DIMENSION, acf_kind_of
from ..flags.features import FEATURE_NAMES
from ..flags.space import FlagSpace
from ..model.errors import CompileIQError
from .prior_fit import SD_FLOOR as SD_FLOOR  # (named here: the prior's constants and hyper-parameters)
from .prior_fit import UNKNOWN_SD, _moments, _predict, _Table, _weights, fit_table
from .prior_fit import Hyper as Hyper

FORMAT = "compileiq-prior"
VERSION = 1
SHIPPED = Path(__file__).with_name("prior_data.json")
ARCH_WIDEN = 2.0  # sd factor for an architecture no observation has
OTHER_ARCH_WEIGHT = 0.5  # an observation of another architecture than the tuned one, where some have it, weighs this
UNKNOWN_INVALID = 0.1
HARMFUL_INVALID = 0.8  # a value at least this likely to be invalid goes last
FIRST_GAIN = 0.03  # a first combination predicted to gain less is not worth a build before the default's order
VALUE_GAIN = 0.01  # a value predicted to gain less (within the noise) is left out of the prior's combinations
LOW_CONFIDENCE = 0.5  # a prior less confident than this leaves the default order (search/search.py)


def value_key(family: str, dimension: str, tokens: Sequence[str]) -> str:
    """The key of one value of one dimension: "nvcc:use_fast_math=--use_fast_math"; any control file of one kind
    "nvcc:apply_controls=<a ptxas control file>"."""
    kind = acf_kind(dimension, tokens)
    return f"{family}:{dimension}={kind or ' '.join(tokens)}"


def acf_kind(dimension: str, tokens: Sequence[str]) -> str:
    """What the prior knows an Advanced Controls value as ("<a ptxas control file>"); "" for any other value."""
    kind = acf_kind_of(tokens[0]) if dimension == ACF_DIMENSION and len(tokens) == 1 else ""
    return f"<a {kind} control file>" if kind else ""


@dataclass(frozen=True)
class Observation:
    """One kernel's or tune's measured single-value effects. `effects[key]`: log speedup of that value alone
    (> 0 faster), or None when it was invalid (build failed, crashed, wrong result)."""

    id: str
    source: str  # where it came from: "landscape:<name>", "tune:<target>", an import's label
    family: str
    arch: str
    features: Mapping[str, float]
    effects: Mapping[str, float | None]
    kind: str = ""

    def as_dict(self) -> dict:
        return {
            "id": self.id,
            "source": self.source,
            "family": self.family,
            "arch": self.arch,
            "kind": self.kind,
            "features": {k: round(float(v), 6) for k, v in self.features.items()},
            "effects": {k: (None if v is None else round(float(v), 6)) for k, v in sorted(self.effects.items())},
        }

    @staticmethod
    def from_dict(d: Mapping, where: str) -> Observation:
        """An observation read from a file: every number finite, every name one printable line."""
        try:
            o = Observation(
                id=str(d["id"]),
                source=str(d["source"]),
                family=str(d["family"]),
                arch=str(d.get("arch", "")),
                kind=str(d.get("kind", "")),
                features={str(k): float(v) for k, v in d["features"].items()},
                effects={str(k): (None if v is None else float(v)) for k, v in d["effects"].items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise CompileIQError(f"{where}: not a prior observation ({exc}); refit or re-export it") from exc
        numbers = {**o.features, **{k: v for k, v in o.effects.items() if v is not None}}
        wrong = next((k for k, v in numbers.items() if not math.isfinite(v)), None)
        if wrong is not None:
            raise CompileIQError(
                f"{where}: observation {o.id[:40]!r}: {wrong[:40]!r} is {numbers[wrong]}, not a finite number"
            )
        names = [o.id, o.source, o.family, o.arch, o.kind, *o.features, *o.effects]
        if any(len(n) > 300 or any(ord(c) < 32 or ord(c) == 127 for c in n) for n in names):
            raise CompileIQError(
                f"{where}: observation {o.id[:40]!r}: a name holds control characters or is too "
                "long; refit or re-export it"
            )
        return o


@dataclass(frozen=True)
class Prediction:
    effect: float  # predicted log speedup of the value alone (> 0: faster)
    sd: float
    p_invalid: float
    support: float  # the similarity-weighted number of observations behind it (0: none had the value)

    @property
    def known(self) -> bool:
        return self.support > 0

    @property
    def gain(self) -> float:
        """The predicted speedup - 1 (0.1: 10% faster)."""
        return math.expm1(self.effect)

    @property
    def harmful(self) -> bool:
        """Confidently slower (two sd) or most likely invalid: tried last."""
        return self.known and (self.p_invalid >= HARMFUL_INVALID or self.effect + 2 * self.sd < 0)

    @property
    def score(self) -> float:
        """What the search orders by: the expected effect if valid, discounted by the risk of being invalid,
        plus half an sd of optimism (a big mover that may be there is worth a build)."""
        return (1 - self.p_invalid) * (self.effect + 0.5 * self.sd)

    def describe(self) -> str:
        if not self.known:
            return "no data"
        text = f"{100 * self.gain:+.1f}% +/- {100 * self.sd:.1f}%"
        return text + (f", invalid {100 * self.p_invalid:.0f}%" if self.p_invalid >= 0.05 else "")


UNKNOWN = Prediction(0.0, UNKNOWN_SD, UNKNOWN_INVALID, 0.0)


class PriorModel:
    """Observations + hyper-parameters per family; `predict` and `predict_space` answer in milliseconds."""

    def __init__(
        self,
        observations: Iterable[Observation],
        hyper: Mapping[str, Hyper] | None = None,
        provenance: Mapping | None = None,
    ) -> None:
        self.observations = list(observations)
        self.hyper = dict(hyper or {})
        self.provenance = dict(provenance or {})
        self._tables: dict[str, _Table] = {}

    # ---- files
    @staticmethod
    def load(path: Path | str) -> PriorModel:
        path = Path(path)
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            raise CompileIQError(f"cannot read the prior {path}: {exc}") from exc
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise CompileIQError(f"{path} is not a compileiq prior (format {FORMAT} version {VERSION})")
        obs = [Observation.from_dict(o, str(path)) for o in doc.get("observations", [])]
        hyper = {fam: Hyper.from_dict(h) for fam, h in doc.get("hyper", {}).items()}
        return PriorModel(obs, hyper, doc.get("provenance", {}))

    @staticmethod
    def shipped() -> PriorModel:
        return PriorModel.load(SHIPPED) if SHIPPED.is_file() else PriorModel([])

    def as_dict(self) -> dict:
        return {
            "format": FORMAT,
            "version": VERSION,
            "provenance": self.provenance,
            "hyper": {fam: h.as_dict() for fam, h in sorted(self.hyper.items())},
            "observations": [o.as_dict() for o in self.observations],
        }

    def save(self, path: Path | str) -> None:
        """One observation per line (diff-friendly); written to a temporary file first."""
        doc = self.as_dict()
        head = {k: v for k, v in doc.items() if k != "observations"}
        lines = [json.dumps(o, separators=(",", ":"), sort_keys=True) for o in doc["observations"]]
        text = json.dumps(head, indent=1)[:-2] + ',\n "observations": [\n' + ",\n".join(lines) + "\n]}\n"
        path = Path(path)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(text)
        tmp.replace(path)

    def with_observations(self, extra: Iterable[Observation]) -> PriorModel:
        """This model with more observations (a user's tunes), same hyper-parameters; an observation of the
        same id replaces the older one."""
        by_id = {o.id: o for o in self.observations}
        for o in extra:
            by_id[o.id] = o
        return PriorModel(by_id.values(), self.hyper, self.provenance)

    # ---- prediction
    def families(self) -> list[str]:
        return sorted({o.family for o in self.observations})

    def _table(self, family: str) -> _Table | None:
        if family not in self._tables:
            obs = [o for o in self.observations if o.family == family]
            if not obs:
                return None
            self._tables[family] = _Table.of(obs, FEATURE_NAMES)
        return self._tables[family]

    def predict_keys(
        self, family: str, features: Mapping[str, float], keys: Sequence[str], arch: str = ""
    ) -> dict[str, Prediction]:
        table = self._table(family)
        if table is None:
            return {k: UNKNOWN for k in keys}
        hyper = self.hyper.get(family, Hyper())
        cols = [table.names.index(f) for f in hyper.features if f in table.names]
        x = np.array([[features.get(n, 0.0) for n in table.names]], dtype=float)
        zq = (x - table.mean) / table.scale
        W = _weights(zq, table.Z, cols, hyper.bandwidth)
        archs = np.array([o.arch for o in table.obs])
        if arch and (archs == arch).any():  # the tuned architecture's own observations weigh most
            W = W * np.where(archs == arch, 1.0, OTHER_ARCH_WEIGHT)[None, :]
        ybar, var, pbar = _moments(table.Y, table.INV)
        effect, sd, p_inv, support = _predict(W, table.Y, table.INV, ybar, var, pbar, hyper.shrink)
        widen = ARCH_WIDEN if arch and arch not in {o.arch for o in table.obs} else 1.0
        col = {k: j for j, k in enumerate(table.keys)}
        out = {}
        for k in keys:
            j = col.get(k)
            if j is None or support[0, j] <= 0:
                out[k] = UNKNOWN
            else:
                out[k] = Prediction(
                    float(effect[0, j]), float(sd[0, j]) * widen, float(p_inv[0, j]), float(support[0, j])
                )
        return out

    def predict_space(
        self, space: FlagSpace, features: Mapping[str, float], arch: str = ""
    ) -> dict[tuple[str, int], Prediction]:
        """(dimension name, value index) -> Prediction for every non-default value of the space."""
        keys = {
            (d.name, i): value_key(space.family, d.name, v)
            for d in space.dimensions
            for i, v in enumerate(d.values)
            if i
        }
        pred = self.predict_keys(space.family, features, sorted(set(keys.values())), arch)
        return {di: pred[k] for di, k in keys.items()}

    # ---- fitting
    def fit(self, families: Sequence[str] | None = None) -> dict[str, dict]:
        """Choose each family's bandwidth, shrink and features by leave-one-out (forward selection of up to
        MAX_FEATURES features); returns the cross-validated scores per family."""
        report = {}
        for family in families or self.families():
            table = self._table(family)
            if table is None:
                continue
            hyper, score = fit_table(table)
            self.hyper[family] = hyper
            report[family] = {
                "observations": len(table.obs),
                "values": len(table.keys),
                "loo_score": score,
                **hyper.as_dict(),
            }
        return report


@dataclass(frozen=True)
class SpacePrior:
    """What the search reads: a Prediction per (dimension index, value index) of its space, and the
    combinations proposed first."""

    predictions: Mapping[tuple[int, int], Prediction]
    source: str = ""  # for the log: "prior (41 observations)"
    first: tuple[tuple[int, ...], ...] = field(default=())
    observations: int = -1  # the family's observations behind it (-1: not said, a prior made by hand)

    def of(self, d: int, i: int) -> Prediction:
        return self.predictions.get((d, i), UNKNOWN)

    @property
    def confidence(self) -> float:
        """1 where it predicts some value faster with confidence (one sd, rarely invalid: a big mover your
        earlier tune of this code measured), else the share of the space's values it has observations of (0:
        it knows nothing). Below LOW_CONFIDENCE the search keeps the default order."""
        if any(p.known and p.effect - p.sd > 0 and p.p_invalid < 0.2 for p in self.predictions.values()):
            return 1.0
        return sum(p.known for p in self.predictions.values()) / max(1, len(self.predictions))


def space_prior(
    model: PriorModel, space: FlagSpace, features: Mapping[str, float], arch: str = "", combinations: int = 2
) -> SpacePrior:
    """The space's predictions and its first combinations: (1) per dimension the value of best score when it
    is confidently positive (effect - sd > 0) and rarely invalid, (2) per dimension the value of best score
    when positive; each added only when it builds other flags than the default and the ones before (with
    --use_fast_math, --prec-div=false adds nothing: the second would be the first again) and its values
    together are predicted to gain at least FIRST_GAIN. Never a control file (`apply_controls`: its prediction is
    the dimension's, not one file's)."""
    by_name = model.predict_space(space, features, arch)
    names = [d.name for d in space.dimensions]
    preds = {(names.index(n), i): p for (n, i), p in by_name.items()}
    firsts: list[tuple[int, ...]] = []
    keys: set[str] = set()  # the flags they build: nvcc's rules may make two choices one build (fast math's)
    rules = [
        lambda p: p.known and p.effect - p.sd > 0 and p.p_invalid < 0.2,
        lambda p: p.known and p.effect >= math.log1p(VALUE_GAIN) and p.p_invalid < 0.5,
    ]
    for rule in rules[:combinations]:
        choice = []
        for d, dim in enumerate(space.dimensions):
            ok = [(preds[(d, i)].score, i) for i in range(1, len(dim.values)) if rule(preds[(d, i)])]
            choice.append(max(ok)[1] if ok and dim.name != ACF_DIMENSION else 0)  # (no file is the dimension's)
        t = tuple(choice)
        key = space.flagset(dict(zip(names, t, strict=False))).key
        predicted = sum(preds[(d, i)].effect for d, i in enumerate(t) if i)
        if any(t) and key not in keys and predicted >= math.log1p(FIRST_GAIN):
            firsts.append(t)
            keys.add(key)
    n = sum(1 for o in model.observations if o.family == space.family)
    source = f"prior ({n} observation{'s' if n != 1 else ''} of {space.family} flags)"
    return SpacePrior(preds, source, tuple(firsts), n)
