"""The CUDA side of the loop up to the GPU: setup of a tune on the n-body example (architecture given,
no GPU here), trial builds with device-code fingerprints and per-kernel resources."""

from __future__ import annotations

import shutil

import pytest

from compileiq_cmake.model.records import Status, Trial
from compileiq_cmake.model.spec import MetricSpec, TuneSpec
from compileiq_cmake.results.store import TrialStore
from compileiq_cmake.search.prior import PriorModel, space_prior
from compileiq_cmake.tune import prior_use
from compileiq_cmake.tune.setup import setup
from compileiq_cmake.tune.trial import build_variant as _build
from compileiq_cmake.tune.trial import same_code as _same_code

from conftest import EXAMPLES, configure, needs_nvcc


@pytest.mark.cmake
@pytest.mark.cuda
@needs_nvcc
def test_cuda_trials_get_fingerprints_and_same_code_is_recognised(tmp_path):
    src = tmp_path / "nbody"
    shutil.copytree(EXAMPLES / "cuda_nbody", src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    spec = TuneSpec(
        source_dir=src,
        build_dir=build,
        target="nbody",
        benchmark=("nbody", "--n", "1024"),
        metric=MetricSpec.parse("time_ms=([0-9.]+)", True),
        output=src / "compileiq.toml",
        pass_regex="PASS",
        cuda_arch="90",
        screen=False,
        workers=1,
    )
    lines: list[str] = []
    ts = setup(spec, lines.append)
    assert ts.project.language == "CUDA" and ts.devices.cuda_arch == "90" and ts.project.artifacts
    space = ts.space
    base = _build(ts, ts.trees[0], space.baseline())
    fast = _build(ts, ts.trees[1], space.flagset({"use_fast_math": 1}))
    o2_set = space.flagset({"ptxas_opt_level": 2})
    assert o2_set.flags == ("-Xptxas=-O2",)
    o2 = _build(ts, ts.trees_for(3)[2], o2_set)  # ptxas -O2 builds the same code as its default -O3 (a finalists' tree)
    assert base.ok and fast.ok and o2.ok
    assert base.fingerprint and fast.fingerprint and base.fingerprint != fast.fingerprint
    assert o2.fingerprint == base.fingerprint and "-Xptxas=-O2" in o2.compile_command
    assert any(k.registers > 0 and k.instructions > 0 and "nbody" in k.name.lower() for k in base.kernels)
    measured = {"a": Trial(0, space.baseline(), Status.OK, fingerprint=base.fingerprint)}
    assert _same_code(o2, measured) is measured["a"]
    assert _same_code(fast, measured) is None
    # issue 23: the prior's features come from the baseline build's objects (here tree 0's), kept in the store
    base_again = _build(ts, ts.trees[0], space.baseline())
    assert base_again.ok
    store = TrialStore(tmp_path / "trials.sqlite", spec.identity())
    features = prior_use._features(ts, store, True, lines.append)
    assert features is not None and features["share_fp32"] > 0.1 and features["registers"] > 0
    assert store.load_result("prior_features") == features  # a resume reads them back
    sp = space_prior(PriorModel.shipped(), space, features, "90")
    fast_d = [d.name for d in space.dimensions].index("use_fast_math")
    assert sp.of(fast_d, 1).known and sp.of(fast_d, 1).gain > 0.05  # n-body: fast math, as recorded kernels say
