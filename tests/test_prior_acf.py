"""Issue 52: the prior learns which kinds of kernels an Advanced Controls file helps. It cannot read the opaque file
(and each file is one tune's own, under a path of its state): it learns "a ptxas control file helped this kind of
kernel by this much", orders a new kernel's candidates by it, and never puts one file in its combinations."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from compileiq_cmake.flags.acf import ACF_DIMENSION, NVCC_ACF, PTXAS_ACF
from compileiq_cmake.flags.features import FEATURE_NAMES
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.model.records import FlagSet, Measurement, Status, Trial
from compileiq_cmake.search.prior import Observation, PriorModel, space_prior, value_key
from compileiq_cmake.search.search import FlagSearch
from compileiq_cmake.tune.prior_use import prior_rows, row_keys, tune_effects

FAST = value_key("nvcc", "use_fast_math", ("--use_fast_math",))
ACF = value_key("nvcc", ACF_DIMENSION, (PTXAS_ACF + "/any/state/acf/0.acf",))


def _files(n: int, folder: str = "/tune/state/acf") -> tuple[tuple[str, ...], ...]:
    return tuple((f"{PTXAS_ACF}{folder}/{i:064x}.acf",) for i in range(n))


@pytest.mark.unit
def test_every_control_file_of_one_kind_is_one_value_to_the_prior():
    a, b = _files(2)
    assert value_key("nvcc", ACF_DIMENSION, a) == value_key("nvcc", ACF_DIMENSION, b) == ACF
    assert ACF == "nvcc:apply_controls=<a ptxas control file>"
    assert value_key("nvcc", ACF_DIMENSION, (NVCC_ACF + "/x.acf",)) == "nvcc:apply_controls=<a nvcc control file>"
    assert value_key("nvcc", "use_fast_math", ("--use_fast_math",)) == "nvcc:use_fast_math=--use_fast_math"
    # a flag of another dimension that happens to name a file is its own value, as before
    assert value_key("nvcc", "extra", (PTXAS_ACF + "/x.acf",)) == f"nvcc:extra={PTXAS_ACF}/x.acf"


def _model() -> PriorModel:
    """Spilling kernels (spill bytes) gained 8% from their best control file, others lost 10% with every
    file they tried; fast math helps neither (so the order of the singles is the control files' to say)."""
    obs = []
    for i in range(8):
        spills = i < 4
        f = {n: 0.0 for n in FEATURE_NAMES} | {"spills": 6.0 + 0.1 * i if spills else 0.01 * i}
        acf = math.log(1.08) if spills else math.log(0.9)
        obs.append(Observation(f"k{i}", "test", "nvcc", "90", f, {ACF: acf, FAST: 0.0}))
    model = PriorModel(obs)
    model.fit()
    return model


def _space(files: int) -> FlagSpace:
    return FlagSpace(
        family="nvcc",
        dimensions=(
            Dimension("use_fast_math", "", ((), ("--use_fast_math",)), relaxes_numerics=True),
            Dimension("restrict", "", ((), ("--restrict",))),
            Dimension(ACF_DIMENSION, "", ((), *_files(files, "/a/new/tune")), ablated_first=True),
        ),
    )


def _singles(search: FlagSearch, n: int) -> list[tuple[str, ...]]:
    search.tell(search.space.baseline(), 0.0)
    out = []
    for _ in range(n):
        fs = search.ask()
        out.append(fs.flags)
        search.tell(fs, 0.0)
    return out


@pytest.mark.unit
def test_what_control_files_did_to_kernels_like_this_orders_the_candidates_and_no_file_enters_a_combination():
    model = _model()
    space = _space(3)
    base = {n: 0.0 for n in FEATURE_NAMES}
    spilling = space_prior(model, space, base | {"spills": 6.2}, "90")
    streaming = space_prior(model, space, base | {"spills": 0.02}, "90")
    d = [x.name for x in space.dimensions].index(ACF_DIMENSION)
    # one prediction for every file of the kind, and it is the one of kernels like this
    assert {spilling.of(d, i) for i in (1, 2, 3)} == {spilling.of(d, 1)}
    assert spilling.of(d, 1).gain == pytest.approx(0.08, abs=0.03) and streaming.of(d, 1).gain < -0.05
    # the prior's combinations name no file: which one would it be
    assert all(choice[d] == 0 for choice in spilling.first)
    # without a prior fast math (approximate arithmetic) is measured first; on spilling code the control files
    # come before it (--restrict, which the prior knows nothing of, keeps its default place)
    default = _singles(FlagSearch(space, 20, 5, 1), 5)
    assert default[0] == ("--use_fast_math",)
    asked = _singles(FlagSearch(space, 20, 5, 1, prior=spilling), 5)
    acf_at = [k for k, flags in enumerate(asked) if flags and flags[0].startswith(PTXAS_ACF)]
    assert asked[0][0].startswith(PTXAS_ACF) and max(acf_at) < asked.index(("--use_fast_math",)), asked
    assert asked.index(("--restrict",)) == default.index(("--restrict",))
    # code where every file was slower: confidently harmful, measured last
    asked = _singles(FlagSearch(space, 20, 5, 1, prior=streaming), 5)
    acf_at = [k for k, flags in enumerate(asked) if flags and flags[0].startswith(PTXAS_ACF)]
    assert streaming.of(d, 1).harmful and acf_at == [2, 3, 4], asked


W = ("--n", "1")


def _trial(i: int, choice: int, median: float, status: Status = Status.OK) -> Trial:
    token = _files(4)[choice - 1] if choice else ()
    flagset = FlagSet(((ACF_DIMENSION, choice),) if choice else (), token)
    return Trial(i, flagset, status, measurements=(Measurement(W, (median,) * 3),) if status == Status.OK else ())


@pytest.mark.unit
def test_a_tune_records_what_its_best_control_file_did_alone():
    """Three files measured alone (2% faster, 9% faster, one that failed): the tune's observation says "a ptxas
    control file" gained 9% here, not whichever file was measured last."""
    space = FlagSpace(family="nvcc", dimensions=(Dimension(ACF_DIMENSION, "", ((), *_files(4))),))
    setup = SimpleNamespace(spec=SimpleNamespace(lower_is_better=True), space=space)
    baseline = _trial(0, 0, 100.0)
    base = SimpleNamespace(base_of=lambda trial: baseline)
    trials = {
        "a": _trial(1, 1, 100 / 1.02),
        "b": _trial(2, 2, 100 / 1.09),
        "c": _trial(3, 3, 0.0, Status.BUILD_FAILED),
    }
    got = tune_effects(setup, trials, base)
    assert got == {ACF: pytest.approx(math.log(1.09))}
    # every file of the tune invalid: the kind is recorded invalid
    only_bad = tune_effects(setup, {"c": trials["c"]}, base)
    assert only_bad == {ACF: None}


@pytest.mark.unit
def test_the_summarys_prior_table_has_one_row_for_the_control_files_and_one_per_public_value():
    space = _space(3)
    sp = space_prior(_model(), space, {n: 0.0 for n in FEATURE_NAMES} | {"spills": 6.2}, "90")
    rows = prior_rows(space, sp)
    assert [(r["dimension"], r["value"]) for r in rows] == [
        ("use_fast_math", "--use_fast_math"),
        ("restrict", "--restrict"),
        (ACF_DIMENSION, "<a ptxas control file>"),
    ]
    # learn() reads a row's key back from its dimension and value: the kind's key, where the tune's best file is
    acf = rows[-1]
    assert row_keys(space)[(acf["dimension"], acf["value"])] == ACF
    assert row_keys(space)[("restrict", "--restrict")] == value_key("nvcc", "restrict", ("--restrict",))
    assert acf["known"] and acf["predicted"] == pytest.approx(sp.of(2, 1).gain)
