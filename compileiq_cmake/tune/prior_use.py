"""Tune stage glue for the learned prior (issue 23): before the search, the target's features (from the
baseline build's objects, or the store on a resume) and the prior's predictions for its space (the shipped
model plus the user's own tunes); after the finalists, this tune's single-value effects added to the local
dataset. `--no-prior` leaves the search as it was without one (today's trial order); `--no-learn` or
COMPILEIQ_NO_LEARN=1 keeps this tune out of the local dataset."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from ..flags.features import FEATURE_NAMES, TargetFeatures, target_features
from ..flags.host_features import object_features
from ..flags.space import FlagSpace
from ..model.errors import CompileIQError
from ..model.events import Log, PriorPrediction, as_stream
from ..model.records import Trial
from ..model.wording import plural
from ..results.prior_store import LocalPrior, learning_off, prior_dir
from ..results.store import TrialStore
from ..search.prior import LOW_CONFIDENCE, Observation, SpacePrior, acf_kind, space_prior, value_key
from .baseline import Baselines
from .trial import loss
from .tune_setup import TuneSetup


@dataclass(frozen=True)
class PriorUse:
    """What the search gets (None: no prior) and what the learning step needs."""

    prior: SpacePrior | None
    features: Mapping[str, float] | None  # None: unknown (no learning either)
    observations: int = 0
    local: int = 0


def _features(setup: TuneSetup, store: TrialStore, fresh: bool, log: Log) -> dict[str, float] | None:
    """The target's feature vector: CUDA from the baseline build's objects (computed once, kept in the store
    for a resume), a host target from its objects' instruction mix, a replay from nothing (all zero)."""
    stored = store.load_result("prior_features")
    if isinstance(stored, dict) and set(FEATURE_NAMES) <= set(stored):
        return {k: float(stored[k]) for k in FEATURE_NAMES}
    if setup.replay is not None:
        as_stream(log).note(
            "prior: a replayed landscape has no kernel features (no build to read them from); "
            "the search runs without the prior's predictions"
        )
        return None
    if setup.project.language != "CUDA":
        vec = _host_features(setup, log)
    else:
        if not fresh:
            as_stream(log).note(
                "prior: the kernel features were not stored by the tune this one resumes and the "
                "baseline was not rebuilt; the search runs without the prior's predictions"
            )
            return None
        tree = setup.baseline_tree
        objects = [tree.path / o for o in setup.project.objects if (tree.path / o).is_file()]
        if not objects:
            as_stream(log).note(
                "prior: no object file of the target was found after the baseline build; the "
                "search runs without the prior's predictions"
            )
            return None
        try:
            relocatable = tree.decisions(setup.spec.target).relocatable
        except (CompileIQError, OSError):
            relocatable = False
        try:
            tf = target_features(
                objects,
                nvcc_path=setup.project.toolchain.path,
                arch=setup.devices.cuda_arch,
                relocatable=relocatable,
                jobs=setup.spec.workers + 1,
            )
        except CompileIQError as exc:
            as_stream(log).note(
                f"prior: the kernel features could not be read ({exc}); the search runs without the prior's predictions"
            )
            return None
        vec = tf.vector()
    store.save_result("prior_features", vec)
    return vec


def _host_features(setup: TuneSetup, log: Log) -> dict[str, float]:
    """A host target's instruction mix from the baseline build's objects (flags/host_features.py); without
    them (objdump missing, no object file found), only its source count, said in one line."""
    units = len(setup.project.target.sources_in(setup.project.language)) or 1
    tree = setup.baseline_tree
    objects = [tree.path / o for o in setup.project.objects if (tree.path / o).is_file()]
    why = "" if objects else "no object file of the target's baseline build was found"
    if objects:
        try:
            return TargetFeatures(kernels=tuple(object_features(objects)), units=units, arch="").vector()
        except CompileIQError as exc:
            why = str(exc)
    as_stream(log).note(
        f"prior: the host code's instruction mix is unknown ({why}); the prior reads its source count only"
    )
    return TargetFeatures(kernels=(), units=units, arch="").vector()


def prepare(setup: TuneSetup, store: TrialStore, base: Baselines, log: Log) -> PriorUse:
    """The prior for this tune's search (logged: where it comes from and what it proposes first)."""
    store.save_result("prior", None)  # what a resumed tune's earlier run predicted is not this run's
    fresh = base.baseline.flagset.key not in base.restored
    if not setup.spec.prior:  # the features still serve the learning step (unless --no-learn)
        as_stream(log).info("prior: off (--no-prior): the search starts as it does without one")
        quiet = not setup.spec.learn or setup.replay is not None
        return PriorUse(None, None if quiet else _features(setup, store, fresh, log))
    features = _features(setup, store, fresh, log)
    if features is None:
        return PriorUse(None, None)
    local = LocalPrior(prior_dir())
    try:
        model = local.model()
    except CompileIQError as exc:
        as_stream(log).note(f"prior: the shipped prior could not be read ({exc}); the search runs without it")
        return PriorUse(None, features)
    n_local = sum(1 for o in model.observations if not o.source.startswith("own-") and o.family == setup.space.family)
    n_family = sum(1 for o in model.observations if o.family == setup.space.family)
    sp = space_prior(model, setup.space, features, setup.devices.cuda_arch)
    known = sum(1 for p in sp.predictions.values() if p.known)
    names = [d.name for d in setup.space.dimensions]
    store.save_result(
        "prior",
        {
            "source": sp.source,
            "confidence": sp.confidence,
            "first": [list(setup.space.flagset(dict(zip(names, c, strict=False))).flags) for c in sp.first],
            "values": prior_rows(setup.space, sp),
        },
    )
    if not n_family:
        as_stream(log).info(
            f"prior: no observation of {setup.space.family} flags yet (shipped or from your tunes): the "
            "search starts as it does without one; this tune's results will be its first"
        )
        return PriorUse(sp, features, 0, 0)
    if sp.confidence < LOW_CONFIDENCE:
        as_stream(log).info(
            f"prior: {plural(n_family, 'observation')} of {setup.space.family} flags predict {known} of the space's "
            f"{plural(sum(len(d.values) - 1 for d in setup.space.dimensions), 'value')}: confidence "
            f"{sp.confidence:.2f}, below {LOW_CONFIDENCE}: the search keeps the default order"
        )
        return PriorUse(sp, features, n_family, n_local)
    firsts, best = [], 0.0
    for choice in sp.first:
        fs = setup.space.flagset(dict(zip(names, choice, strict=False)))
        effect = sum(sp.of(d, i).effect for d, i in enumerate(choice) if i)
        best = max(best, effect)
        firsts.append(f"{fs.describe()} (predicted {100 * math.expm1(effect):+.1f}%)")
    as_stream(log).info(
        f"prior: {plural(n_family, 'observation')} of {setup.space.family} flags "
        f"({n_local} from your tunes) predict {known} of the space's "
        f"{plural(sum(len(d.values) - 1 for d in setup.space.dimensions), 'value')} (confidence {sp.confidence:.2f}); "
        + (f"first trials from it: {'; '.join(firsts)}" if firsts else "it predicts no value faster: its order only")
        + "; single-flag changes: those predicted faster first, the others in the default order",
        predicted_speedup=math.exp(best),
        payload=PriorPrediction(math.exp(best)),
    )  # a suite's scheduler ranks a target by it before its trials speak
    return PriorUse(sp, features, n_family, n_local)


def prior_rows(space: FlagSpace, sp: SpacePrior) -> list[dict]:
    """The summary's prior table before the search: one row per value the prior tells apart (every control file
    of one kind is one row, "<a ptxas control file>", measured as the best of them: `tune_effects`)."""
    rows: dict[str, dict] = {}
    for n, d in enumerate(space.dimensions):
        for i in range(1, len(d.values)):
            key = value_key(space.family, d.name, d.values[i])
            rows.setdefault(
                key,
                {
                    "dimension": d.name,
                    "value": row_value(d.name, d.values[i]),
                    "known": sp.of(n, i).known,
                    "predicted": sp.of(n, i).gain,
                    "sd": sp.of(n, i).sd,
                    "p_invalid": sp.of(n, i).p_invalid,
                    "measured": None,
                    "measured_invalid": False,
                },
            )
    return list(rows.values())


def row_value(dimension: str, tokens: tuple[str, ...]) -> str:
    """A value as the prior table shows it: its flags, or the kind of a control file ("<a ptxas control file>")."""
    return acf_kind(dimension, tokens) or " ".join(tokens)


def row_keys(space: FlagSpace) -> dict[tuple[str, str], str]:
    """(dimension, shown value) of a prior table's row -> the prior's key of that value (learn() reads the table
    back by it: a shown kind is no flag to re-key)."""
    return {
        (d.name, row_value(d.name, v)): value_key(space.family, d.name, v)
        for d in space.dimensions
        for v in d.values[1:]
    }


def observation_id(setup: TuneSetup) -> str:
    where = f"{setup.spec.source_dir}|{setup.spec.target}|{setup.space.family}|{setup.devices.cuda_arch}"
    return f"tune:{setup.spec.target}:{hashlib.sha256(where.encode()).hexdigest()[:12]}"


RIDGE = 0.05  # the combinations' least squares: a value seen in few trials is pulled towards "no effect"


def tune_effects(setup: TuneSetup, trials: Mapping[str, Trial], base: Baselines) -> dict[str, float | None]:
    """Per value of the space the tune learned something of: its effect alone (minus its loss) when a trial
    changed it alone, None when that trial was invalid (control files: the best valid file's, see
    search/prior.py); for values only tried in combinations, their
    additive effect by ridge least squares over the valid trials (loss = sum of the values' effects)."""
    lower = setup.spec.lower_is_better
    dims = {d.name: d for d in setup.space.dimensions}

    def key(name: str, i: int) -> str | None:
        return (
            value_key(setup.space.family, name, dims[name].values[i])
            if name in dims and 0 < i < len(dims[name].values)
            else None
        )

    out: dict[str, float | None] = {}
    rows: list[tuple[list[str], float]] = []
    for trial in trials.values():
        keys = [k for k in (key(n, i) for n, i in trial.flagset.choices) if k]
        if len(keys) != len(trial.flagset.choices):
            continue  # a value outside this space (per-file proposals, another space)
        if trial.valid:
            rows.append((keys, -loss(trial, base.base_of(trial), lower)))
        if len(keys) == 1:  # several files of one control-file kind are one key: the best one alone counts
            effect = rows[-1][1] if trial.valid else None
            known = out.get(keys[0])
            if keys[0] not in out or (effect is not None and (known is None or effect > known)):
                out[keys[0]] = effect
    columns = sorted({k for ks, _ in rows for k in ks} - set(out))
    if columns:
        X = np.array([[1.0 if c in ks else 0.0 for c in columns] for ks, _ in rows])
        y = np.array([effect - sum(out.get(k) or 0.0 for k in ks if k in out) for ks, effect in rows])
        beta = np.linalg.solve(X.T @ X + RIDGE * np.eye(len(columns)), X.T @ y)
        out.update({c: float(b) for c, b in zip(columns, beta, strict=False)})
    return out


def learn(
    setup: TuneSetup, use: PriorUse, trials: Mapping[str, Trial], base: Baselines, store: TrialStore, log: Log
) -> None:
    """Record what this tune measured of each predicted value (the summary's prior table) and add its
    effects to the local dataset (unless opted out)."""
    if setup.spec.objective != "time":  # the prior predicts speedups: an energy tune's gains are not those
        if use.features is not None:
            as_stream(log).info(
                "prior: this tune's results were not added to your local prior data: it measured "
                "energy, and the prior predicts time"
            )
        return
    doc = store.load_result("prior")
    measured = tune_effects(setup, trials, base) if doc or use.features is not None else {}
    if isinstance(doc, dict):
        keys = row_keys(setup.space)
        for v in doc.get("values", []):
            key = keys.get((v["dimension"], v["value"]))
            if key in measured:
                m = measured[key]
                v["measured"], v["measured_invalid"] = (None, True) if m is None else (math.expm1(m), False)
        store.save_result("prior", doc)
    if use.features is None or setup.replay is not None:
        return
    if not setup.spec.learn or learning_off():
        as_stream(log).info(
            "prior: this tune's results were not added to your local prior data (--no-learn or COMPILEIQ_NO_LEARN)"
        )
        return
    effects = measured
    if not effects:
        return
    obs = Observation(
        id=observation_id(setup),
        source=f"tune:{setup.spec.target}",
        family=setup.space.family,
        arch=setup.devices.cuda_arch,
        features=dict(use.features),
        effects=effects,
    )
    try:
        path = LocalPrior(prior_dir()).save(obs)
    except OSError as exc:
        as_stream(log).note(f"prior: this tune's results could not be added to your local prior data ({exc})")
        return
    as_stream(log).info(
        f"prior: the effects of {plural(len(effects), 'flag value')} measured by this tune added to your local prior "
        f"data ({path}; --no-learn or COMPILEIQ_NO_LEARN=1 opts out)"
    )
