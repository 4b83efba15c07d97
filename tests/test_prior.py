"""The learned prior (issue 23): kernel features from SASS, the model (prediction, uncertainty, fit, file),
the search ordered by it (and unchanged without it), and the user's local prior data."""

from __future__ import annotations

import json
import math
import shutil
import subprocess

import pytest

from compileiq_cmake.flags.features import FEATURE_NAMES, TargetFeatures, file_features, parse_sass
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.model.errors import CompileIQError, UsageError
from compileiq_cmake.results.prior_store import LocalPrior
from compileiq_cmake.search.prior import (
    SHIPPED,
    UNKNOWN,
    Observation,
    Prediction,
    PriorModel,
    SpacePrior,
    space_prior,
    value_key,
)
from compileiq_cmake.search.search import FlagSearch

from conftest import needs_nvcc, one_line_error, run_cli

SASS = """
Resource usage:
 Function k:
  REG:40 STACK:16 SHARED:2048 LOCAL:8 CONSTANT[0]:548 TEXTURE:0 SURFACE:0 SAMPLER:0

\tcode for sm_90
\t\tFunction : k
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                      /* 0x00000a00ff017b82 */
        /*0010*/                   LDG.E R2, desc[UR4][R2.64] ;                /* 0x0000000402027981 */
        /*0020*/                   FFMA R3, R2, R2, R2 ;                       /* 0x0000000202037223 */
        /*0030*/                   MUFU.EX2 R4, R3 ;                           /* 0x0000000300047308 */
        /*0040*/               @P0 CALL.ABS.NOINC 0x0 ;                        /* 0x0000000000007943 */
        /*0050*/                   CALL.REL.NOINC 0x200 ;                      /* 0x0000000000007944 */
        /*0060*/                   STG.E desc[UR4][R6.64], R4 ;                /* 0x0000000406007986 */
        /*0070*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;               /* 0x0000000000007b1d */
        /*0080*/                   EXIT ;                                      /* 0x000000000000794d */
        /*0090*/                   NOP;                                        /* 0x0000000000007918 */
"""


@pytest.mark.unit
def test_the_instruction_mix_resources_and_relocated_calls_are_read_from_the_sass():
    (k,) = parse_sass(SASS)
    assert k.name == "sm_90:k" and k.instructions == 9  # the NOP padding is not counted
    assert k.mix["ld_global"] == k.mix["st_global"] == k.mix["mufu"] == k.mix["barrier"] == 1
    assert k.mix["fp32"] == k.mix["fma"] == 1 and k.mix["call"] == 2
    assert k.calls_out == 1  # the relocated call; CALL.REL to an offset is an internal slow path
    assert (k.registers, k.spill_bytes, k.shared_bytes) == (40, 24, 2048)
    assert k.occupancy == pytest.approx(51 / 64)  # 40 registers: 1280 per warp, 51 warps of 64
    v = TargetFeatures(kernels=(k,), units=1, relocatable=True).vector()
    assert tuple(v) == FEATURE_NAMES and v["share_mufu"] == pytest.approx(1 / 9)
    assert v["relocatable"] == v["cross_unit_calls"] == 1.0 and v["shared_kib"] == 2.0


@pytest.mark.unit
def test_time_shares_weight_the_kernels_when_the_collector_measured_them():
    a = parse_sass(SASS.replace("Function k", "Function a").replace(": k", ": a"))[0]
    hot = parse_sass(SASS.replace("MUFU.EX2 R4, R3", "FADD R4, R3, R3"))[0]
    b = type(hot)(name="sm_90:b", instructions=hot.instructions, mix=hot.mix, registers=hot.registers)
    by_instr = TargetFeatures(kernels=(a, b)).vector()["share_mufu"]
    by_time = TargetFeatures(kernels=(a, b), time_shares={"a": 0.0, "b": 1.0}).vector()["share_mufu"]
    assert by_instr == pytest.approx(1 / 18) and by_time == 0.0


def _obs(i: int, mufu: float, fast: float | None, cg: float = -0.05) -> Observation:
    f = {n: 0.0 for n in FEATURE_NAMES} | {"share_mufu": mufu, "share_fp32": 0.3}
    return Observation(
        id=f"k{i}",
        source="test",
        family="nvcc",
        arch="90",
        features=f,
        effects={
            value_key("nvcc", "use_fast_math", ("--use_fast_math",)): fast,
            value_key("nvcc", "load_cache", ("-Xptxas=-dlcm=cg",)): cg,
        },
    )


def _model() -> PriorModel:
    """Math-heavy kernels (many MUFU) gain 40% from fast math, memory kernels nothing; one breaks under it."""
    obs = [_obs(i, 0.08 + 0.002 * i, math.log(1.4)) for i in range(8)]
    obs += [_obs(10 + i, 0.001 * i, 0.0) for i in range(8)]
    obs.append(_obs(30, 0.09, None))
    model = PriorModel(obs)
    model.fit()
    return model


FAST = value_key("nvcc", "use_fast_math", ("--use_fast_math",))
CG = value_key("nvcc", "load_cache", ("-Xptxas=-dlcm=cg",))


@pytest.mark.unit
def test_the_effect_of_a_value_is_predicted_from_similar_kernels_with_its_uncertainty():
    model = _model()
    assert "share_mufu" in model.hyper["nvcc"].features  # the fit finds what separates them
    base = {n: 0.0 for n in FEATURE_NAMES}
    math_heavy = model.predict_keys("nvcc", base | {"share_mufu": 0.085, "share_fp32": 0.3}, [FAST, CG, "nvcc:x=y"])
    memory = model.predict_keys("nvcc", base | {"share_mufu": 0.003, "share_fp32": 0.3}, [FAST])
    assert math_heavy[FAST].gain == pytest.approx(0.4, abs=0.08) and memory[FAST].gain == pytest.approx(0.0, abs=0.08)
    assert math_heavy[FAST].p_invalid > memory[FAST].p_invalid  # the broken one is a math-heavy kernel
    assert 0 < math_heavy[FAST].sd < 0.3 and math_heavy[CG].effect == pytest.approx(-0.05, abs=0.01)
    assert math_heavy["nvcc:x=y"] is UNKNOWN  # a value no observation has: no opinion
    assert memory[FAST].describe().startswith("+0.") or memory[FAST].describe().startswith("-0.")
    # another architecture: the same mean, a wider uncertainty
    other = model.predict_keys("nvcc", base | {"share_mufu": 0.085, "share_fp32": 0.3}, [FAST], arch="100")
    assert other[FAST].effect == pytest.approx(math_heavy[FAST].effect) and other[FAST].sd > math_heavy[FAST].sd


@pytest.mark.unit
def test_the_model_file_is_versioned_json_and_a_bad_one_is_refused(tmp_path):
    model = _model()
    path = tmp_path / "prior.json"
    model.save(path)
    doc = json.loads(path.read_text())
    assert doc["format"] == "compileiq-prior" and doc["version"] == 1 and len(doc["observations"]) == 17
    again = PriorModel.load(path)
    q = {n: 0.0 for n in FEATURE_NAMES} | {"share_mufu": 0.085}
    assert again.predict_keys("nvcc", q, [FAST])[FAST].effect == pytest.approx(
        model.predict_keys("nvcc", q, [FAST])[FAST].effect, abs=1e-5
    )  # 6 decimals kept
    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    with pytest.raises(CompileIQError, match="not a compileiq prior"):
        PriorModel.load(tmp_path / "bad.json")


@pytest.mark.unit
def test_the_shipped_prior_has_at_least_thirty_recorded_kernels_and_predicts_fast_math_for_math_heavy_code():
    model = PriorModel.shipped()
    kernels = [o for o in model.observations if o.id.startswith("landscape:")]
    assert len(kernels) >= 30 and {"own-v1", "own-llm", "own-hpc"} <= {o.source for o in kernels}
    nbody = next(o for o in kernels if o.id == "landscape:nbody")
    rest = PriorModel([o for o in model.observations if o.id != nbody.id], model.hyper)
    pred = rest.predict_keys("nvcc", nbody.features, [FAST])[FAST]
    assert pred.gain > 0.1  # held out, fast math is still predicted a big mover for n-body
    assert SHIPPED.stat().st_size < 2_000_000


def _space() -> FlagSpace:
    dims = (
        Dimension("use_fast_math", "", ((), ("--use_fast_math",)), relaxes_numerics=True),
        Dimension("load_cache", "", ((), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",))),
        Dimension("restrict", "", ((), ("--restrict",))),
        Dimension("ptxas_opt_level", "", ((), ("-Xptxas=-O1",))),
    )
    return FlagSpace(family="nvcc", dimensions=dims)


def _asks(search: FlagSearch, n: int) -> list[tuple[str, ...]]:
    out = []
    search.tell(search.space.baseline(), 0.0)
    for k in range(n):
        fs = search.ask()
        if fs is None:
            break
        out.append(fs.flags)
        search.tell(fs, 0.01 * k)
    return out


@pytest.mark.unit
def test_without_a_prior_or_with_one_that_knows_nothing_the_trial_order_is_todays():
    space = _space()
    today = _asks(FlagSearch(space, 20, 7, 1), 12)
    blank = _asks(FlagSearch(space, 20, 7, 1, prior=SpacePrior({}, "prior (0 observations)")), 12)
    assert today == blank and len(today) == 12


@pytest.mark.unit
def test_the_prior_proposes_its_best_combination_first_and_tries_harmful_values_last():
    space = _space()
    preds = {
        (0, 1): Prediction(0.3, 0.05, 0.0, 5.0),
        (1, 1): Prediction(-0.4, 0.05, 0.0, 5.0),
        (1, 2): Prediction(0.02, 0.01, 0.0, 5.0),
        (2, 1): Prediction(0.0, 0.01, 0.0, 5.0),
        (3, 1): Prediction(0.0, 0.01, 0.95, 5.0),
    }
    sp = SpacePrior(preds, "prior (5 observations)", ((1, 2, 0, 0),))
    search = FlagSearch(space, 20, 7, 1, prior=sp)
    search.tell(space.baseline(), 0.0)
    first = search.ask()
    assert first.flags == ("--use_fast_math", "-Xptxas=-dlcm=cs")
    assert "predicted best combination" in search.proposed_by(first)
    search.tell(first, -0.01)  # no big gain: the singles alone, in the prior's order
    singles = []
    for _ in range(5):
        fs = search.ask()
        singles.append(fs.flags)
        assert search.proposed_by(fs) is None
        search.tell(fs, 0.0)
    assert singles[0] == ("--use_fast_math",)  # the best predicted single first
    assert set(singles[-2:]) == {("-Xptxas=-dlcm=cg",), ("-Xptxas=-O1",)}  # confidently slower / likely invalid: last
    # a big gain of the prior's combination: the remaining singles are measured on top of it
    search = FlagSearch(space, 20, 7, 1, prior=sp)
    search.tell(space.baseline(), 0.0)
    search.tell(search.ask(), -0.3)
    nxt = [search.ask().flags for _ in range(3)]
    assert ("--use_fast_math", "-Xptxas=-dlcm=cs", "--restrict") in nxt


@pytest.mark.unit
def test_space_prior_takes_confident_gains_first_then_every_predicted_gain():
    model = _model()
    space = _space()
    q = {n: 0.0 for n in FEATURE_NAMES} | {"share_mufu": 0.085, "share_fp32": 0.3}
    sp = space_prior(model, space, q, "90")
    assert sp.first and sp.first[0][0] == 1  # fast math
    assert sp.of(1, 1).effect < 0 and not sp.of(2, 1).known


@pytest.mark.unit
def test_two_first_combinations_that_build_the_same_flags_are_proposed_once():
    """Fast math confidently faster, --prec-div=false only maybe (positive mean, wide spread): the second rule
    adds --prec-div=false, which --use_fast_math already implies, so both rules name one build. Seen on the
    H200 (slow_check): the log listed one combination twice and named the wrong rule for it."""
    prec = value_key("nvcc", "prec_div", ("--prec-div=false",))
    obs = [
        Observation(
            id=f"k{i}",
            source="test",
            family="nvcc",
            arch="90",
            features={n: 0.0 for n in FEATURE_NAMES} | {"share_mufu": 0.1},
            effects={FAST: math.log(1.5) + 0.01 * (i % 2), prec: 0.04 if i % 2 else -0.02},
        )
        for i in range(8)
    ]
    space = FlagSpace(
        family="nvcc",
        dimensions=(
            Dimension("use_fast_math", "", ((), ("--use_fast_math",)), relaxes_numerics=True),
            Dimension("prec_div", "", ((), ("--prec-div=false",)), relaxes_numerics=True),
        ),
    )
    sp = space_prior(PriorModel(obs), space, obs[0].features, "90")
    assert sp.of(1, 1).effect > 0 and sp.of(1, 1).effect - sp.of(1, 1).sd <= 0  # only the second rule takes it
    assert sp.first == ((1, 0),)
    search = FlagSearch(space, 10, 1, 1, prior=sp)
    search.tell(space.baseline(), 0.0)
    first = search.ask()
    assert first.flags == ("--use_fast_math",) and "predicted best combination" in search.proposed_by(first)


@pytest.mark.unit
def test_local_prior_data_is_saved_replaced_exported_and_imported(tmp_path):
    local = LocalPrior(tmp_path / "a")
    local.save(_obs(1, 0.1, 0.2))
    local.save(_obs(1, 0.1, 0.3))  # the same target again: replaces
    local.save(_obs(2, 0.0, None))
    obs = local.observations()
    assert [o.id for o in obs] == ["k1", "k2"] and obs[0].effects[FAST] == 0.3 and obs[1].effects[FAST] is None
    assert len(local.model(PriorModel([])).observations) == 2
    assert local.export(tmp_path / "team.json") == 2
    other = LocalPrior(tmp_path / "b")
    assert other.import_file(tmp_path / "team.json") == (2, 0, 0) and len(other.observations()) == 2
    # issue 36: importing the same file again adds nothing and says so (it said "added 2" again)
    assert other.import_file(tmp_path / "team.json") == (0, 0, 2) and len(other.observations()) == 2
    (tmp_path / "partial.json").write_text('{"format": "compileiq-prior", "version": 1, "observations": [{"id": 1}]}')
    with pytest.raises(UsageError):
        other.import_file(tmp_path / "partial.json")
    assert len(other.observations()) == 2  # nothing of a bad file is written
    report = other.refit(PriorModel([]))
    assert report["nvcc"]["observations"] == 2 and other.refit_path.is_file()


@pytest.mark.unit
def test_prior_command_shows_exports_and_refuses_a_bad_import_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("COMPILEIQ_CACHE_DIR", str(tmp_path / "cache"))
    shown = run_cli("prior")
    assert shown.returncode == 0 and "observations (0 from your tunes" in shown.stdout and "nvcc:" in shown.stdout
    (tmp_path / "bad.json").write_text("{not json")
    proc = run_cli("prior", "--import", str(tmp_path / "bad.json"))
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "--import", "not valid JSON")
    proc = run_cli("prior", "--export", str(tmp_path / "no" / "such" / "mine.json"))
    one_line_error(proc.returncode, proc.stdout, proc.stderr, "--export", "does not exist")
    assert not (tmp_path / "no").exists()
    out = run_cli("prior", "--export", str(tmp_path / "mine.json"))
    assert out.returncode == 0 and json.loads((tmp_path / "mine.json").read_text())["observations"] == []


@pytest.mark.cuda
@needs_nvcc
def test_features_of_a_real_kernel_show_its_transcendentals(tmp_path):
    src = tmp_path / "k.cu"
    src.write_text(
        'extern "C" __global__ void k(float* o, const float* i, int n) {\n'
        "  int t = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (t < n) o[t] = expf(i[t]) * sinf(i[t]) / (1.0f + i[t]);\n}\n"
    )
    subprocess.run(["nvcc", "-cubin", "-arch=sm_90", "-O3", str(src), "-o", str(tmp_path / "k.cubin")], check=True)
    (k,) = file_features(tmp_path / "k.cubin", arch="90")
    v = TargetFeatures(kernels=(k,)).vector()
    assert k.name == "sm_90:k" and k.mix["mufu"] >= 2 and k.mix["ld_global"] >= 1 and k.registers > 0
    assert 0 < v["share_mufu"] < 0.5 and v["share_fp32"] > 0.1
    assert shutil.which("nvcc")


@pytest.mark.unit
def test_a_dimension_the_prior_never_saw_keeps_the_default_place_and_rules():
    """Issue 36: a fast-math choice under a name no observation has scored like a small gain and went behind
    values predicted slower with a large uncertainty (worse than no prior on 5 of 7 gainful kernels). It keeps
    the default order's place (approximate arithmetic first); the known values are ordered among themselves."""
    dims = (
        Dimension("load_cache", "", ((), ("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",))),
        Dimension("restrict", "", ((), ("--restrict",))),
        Dimension("fast_math_user", "", ((), ("--use_fast_math",)), relaxes_numerics=True),
        Dimension("ptxas_opt_level", "", ((), ("-Xptxas=-O1",))),
    )
    space = FlagSpace(family="nvcc", dimensions=dims)
    uncertain = {
        (0, 1): Prediction(-0.01, 0.1, 0.0, 2.0),
        (0, 2): Prediction(-0.01, 0.1, 0.0, 2.0),
        (1, 1): Prediction(0.03, 0.01, 0.0, 5.0),
        (3, 1): Prediction(-0.3, 0.02, 0.0, 5.0),
    }
    sp = SpacePrior(uncertain, "prior (5 observations)")
    assert UNKNOWN.score < uncertain[(0, 1)].score  # what put it behind them before
    with_prior = _asks(FlagSearch(space, 20, 7, 1, prior=sp), 5)
    default = _asks(FlagSearch(space, 20, 7, 1), 5)
    assert with_prior[0] == default[0] == ("--use_fast_math",)
    # then the known values, the prior's best score first
    assert set(with_prior[1:4]) == {("-Xptxas=-dlcm=cg",), ("-Xptxas=-dlcm=cs",), ("--restrict",)}
    assert with_prior[-1] == ("-Xptxas=-O1",)  # confidently slower: last
    # before even the prior's own combination (the default measures approximate arithmetic first)
    combo = SpacePrior(uncertain, "prior (5 observations)", ((1, 0, 0, 0), (2, 0, 0, 0)))
    search = FlagSearch(space, 20, 7, 1, prior=combo)
    search.tell(space.baseline(), 0.0)
    assert search.ask().flags == ("--use_fast_math",)
    search.tell(space.flagset({"fast_math_user": 1}), 0.0)
    big = search.ask()
    assert big.flags == ("-Xptxas=-dlcm=cg",) and "predicted best combination" in search.proposed_by(big)


@pytest.mark.unit
def test_observations_of_the_tuned_architecture_weigh_more_than_others():
    base = {n: 0.0 for n in FEATURE_NAMES}
    obs = [
        Observation(f"k{i}", "t", "nvcc", arch, base, {FAST: effect})
        for i, (arch, effect) in enumerate([("90", 0.2)] * 3 + [("80", -0.2)] * 3)
    ]
    model = PriorModel(obs)
    on_90 = model.predict_keys("nvcc", base, [FAST], arch="90")[FAST].effect
    on_80 = model.predict_keys("nvcc", base, [FAST], arch="80")[FAST].effect
    pooled = model.predict_keys("nvcc", base, [FAST])[FAST].effect
    assert on_90 > pooled > on_80 and pooled == pytest.approx(0.0, abs=1e-9)
