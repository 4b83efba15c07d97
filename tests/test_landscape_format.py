"""The landscape file format (benchmarks/landscapes/README.md): loading, lookup, validation of malformed
files, the committed synthetic sample, and the recorder's sub-spaces and point sampling."""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import sys
from pathlib import Path

import pytest

from compileiq_cmake.flags.space import load_space
from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.search.landscape import Landscape

REPO = Path(__file__).resolve().parent.parent
LANDSCAPES = REPO / "benchmarks" / "landscapes"


def synthetic_doc() -> dict:
    """2 x 3 points: fast math (+20%, wrong with -dlcm=cg), load cache (cg -10%, cs same code as default)."""
    codes = [
        {
            "digest": "d0",
            "status": "ok",
            "valid": True,
            "error": 0.0,
            "regs": 32,
            "spill": 0,
            "time_us": [100.0, 101.0],
        },
        {"digest": "d1", "status": "ok", "valid": True, "error": 0.0, "time_us": [111.0, 112.0]},
        {"digest": "d2", "status": "ok", "valid": True, "error": 2e-6, "time_us": [83.0, 84.0]},
        {"digest": "d3", "status": "wrong_result", "valid": False, "error": 0.5, "time_us": [70.0, 70.5]},
        {
            "digest": None,
            "status": "build_failed",
            "valid": False,
            "error": None,
            "message": "ptxas fatal: x",
            "time_us": [],
        },
    ]
    return {
        "format": "compileiq-landscape",
        "version": 1,
        "kernel": "toy",
        "family": "nvcc",
        "metric": {"name": "kernel_time", "unit": "us", "higher_is_better": False},
        "meta": {"synthetic": True, "noise": {"rel_sd": 0.004, "pairs": 4}},
        "dimensions": [
            {"name": "use_fast_math", "values": [[], ["--use_fast_math"]]},
            {"name": "load_cache", "values": [[], ["-Xptxas=-dlcm=cg"], ["-Xptxas=-dlcm=cs"]]},
        ],
        "default_code": 0,
        "points": [[0, 0, 0], [0, 1, 1], [0, 2, 0], [1, 0, 2], [1, 1, 3], [1, 2, 4]],
        "codes": codes,
    }


def write(tmp_path: Path, doc, name: str = "toy.json") -> Path:
    path = tmp_path / name
    path.write_text(doc if isinstance(doc, str) else json.dumps(doc))
    return path


@pytest.mark.unit
def test_load_and_views(tmp_path):
    land = Landscape.load(write(tmp_path, synthetic_doc()))
    assert [d.name for d in land.dimensions] == ["use_fast_math", "load_cache"]
    assert land.dimensions[1].values[2] == ("-Xptxas=-dlcm=cs",)
    assert len(land) == 6 and land.complete and land.synthetic
    assert land.noise == pytest.approx(0.004)
    assert land.default_time_us == pytest.approx(100.5)
    assert land.space().size == 6
    assert land.unique_codes() == 4 and land.unique_codes(valid_only=True) == 3
    assert "SYNTHETIC" in land.describe()


@pytest.mark.unit
def test_numerics_traits_from_the_catalogue_unless_the_file_says(tmp_path):
    land = Landscape.load(write(tmp_path, synthetic_doc()))
    fast, cache = land.dimensions
    assert (fast.unsafe_numerics, fast.relaxes_numerics) == (True, True)  # nvcc.toml's use_fast_math
    assert (cache.unsafe_numerics, cache.relaxes_numerics) == (False, False)
    doc = synthetic_doc()
    doc["dimensions"][0]["relaxes_numerics"] = False
    doc["dimensions"][1]["unsafe_numerics"] = True
    fast, cache = Landscape.load(write(tmp_path, doc, "explicit.json")).dimensions
    assert (fast.unsafe_numerics, fast.relaxes_numerics) == (True, False)
    assert cache.unsafe_numerics and not cache.relaxes_numerics


@pytest.mark.unit
def test_lookup(tmp_path):
    land = Landscape.load(write(tmp_path, synthetic_doc()))
    p = land.lookup(("-Xptxas=-dlcm=cs", "--use_fast_math"))  # order does not matter
    assert p is not None and p.choices == (1, 2) and p.status == "build_failed" and not p.valid
    assert p.speedup == 0.0
    fast = land.lookup(["--use_fast_math", "--use_fast_math"])  # duplicates do not matter
    assert fast.valid and fast.digest == "d2" and fast.noise == pytest.approx(0.004)
    assert fast.time_us == (83.0, 84.0)
    assert fast.speedup_samples == pytest.approx((100.5 / 83.0, 100.5 / 84.0))
    assert fast.speedup == pytest.approx(100.5 / 83.5)
    assert land.lookup(()).choices == (0, 0) and land.lookup(()).digest == land.default.digest
    assert land.lookup(("-Xptxas=-dlcm=cs",)).digest == "d0"  # same code as the default
    assert land.lookup(("--restrict",)) is None  # not a flag of this landscape
    assert land.lookup(("-Xptxas=-dlcm=cg", "-Xptxas=-dlcm=cs")) is None  # two values of one dimension
    # a token only added by an interaction rule (catalogue.canonical_flags) is ignored
    assert land.lookup(("--use_fast_math", "-Xcicc=-kernel-params-are-restrict")).digest == "d2"

    class FakeFlagSet:
        flags = ("--use_fast_math",)

    assert land.lookup(FakeFlagSet()).digest == "d2"
    assert land.point({"use_fast_math": 1}).digest == "d2"
    assert land.point((1, 1)).status == "wrong_result"


@pytest.mark.unit
def test_best_valid_skips_invalid(tmp_path):
    land = Landscape.load(write(tmp_path, synthetic_doc()))
    best = land.best_valid()
    assert best.flags == ("--use_fast_math",)  # the wrong-result point is faster but invalid
    assert best.valid and best.speedup > 1.15


@pytest.mark.unit
def test_sampled_landscape_lookup_outside_is_none(tmp_path):
    doc = synthetic_doc()
    doc["points"] = [r for r in doc["points"] if r[:2] != [1, 2]]
    land = Landscape.load(write(tmp_path, doc))
    assert not land.complete
    assert land.lookup(("--use_fast_math", "-Xptxas=-dlcm=cs")) is None


def _mutations():
    def m(fn):
        doc = synthetic_doc()
        fn(doc)
        return doc

    return {
        "wrong format": (m(lambda d: d.update(format="other")), "not a landscape file"),
        "version": (m(lambda d: d.update(version=99)), "unsupported version"),
        "no default point": (m(lambda d: d["points"].pop(0)), "default point"),
        "choice out of range": (m(lambda d: d["points"][1].__setitem__(1, 7)), "out of range"),
        "code out of range": (m(lambda d: d["points"][1].__setitem__(2, 42)), "code id 42 out of range"),
        "short row": (m(lambda d: d["points"][1].pop()), "choice indices and a code id"),
        "duplicate point": (m(lambda d: d["points"].append([0, 1, 1])), "appears twice"),
        "valid mismatch": (m(lambda d: d["codes"][3].update(valid=True)), "valid must be true exactly"),
        "bad status": (m(lambda d: d["codes"][1].update(status="fast")), "status 'fast'"),
        "negative time": (m(lambda d: d["codes"][1].update(time_us=[-1.0])), "positive numbers"),
        "valid untimed": (m(lambda d: d["codes"][1].update(time_us=[])), "at least one time sample"),
        "missing digest": (m(lambda d: d["codes"][1].update(digest=None)), "lack a digest"),
        "default value": (
            m(lambda d: d["dimensions"][0].update(values=[["--use_fast_math"], []])),
            "start with the default",
        ),
        "token in two values": (m(lambda d: d["dimensions"][1]["values"].append(["--use_fast_math"])), "two values"),
        "no noise": (m(lambda d: d["meta"].pop("noise")), "rel_sd"),
        "negative noise": (m(lambda d: d["meta"].update(noise={"rel_sd": -0.1})), "rel_sd"),
        "dry run": (m(lambda d: d["meta"].update(dry_run=True)), "dry-run"),
        "higher is better": (m(lambda d: d["metric"].update(higher_is_better=True)), "metric"),
        "default invalid": (
            m(lambda d: (d["points"].__setitem__(0, [0, 0, 3]), d.update(default_code=3))),
            "default point must be valid",
        ),
        "not an object": ([1, 2, 3], "top level"),
        "trait not a bool": (
            m(lambda d: d["dimensions"][0].update(relaxes_numerics="yes")),
            "relaxes_numerics must be true or false",
        ),
    }


@pytest.mark.unit
@pytest.mark.parametrize("case", sorted(_mutations()))
def test_malformed_file_one_line_error(tmp_path, case):
    doc, expected = _mutations()[case]
    path = write(tmp_path, copy.deepcopy(doc))
    with pytest.raises(CompileIQError) as info:
        Landscape.load(path)
    message = str(info.value)
    assert "\n" not in message and message.startswith(f"landscape {path}:")
    assert expected in message


@pytest.mark.unit
def test_not_json_and_missing_file(tmp_path):
    with pytest.raises(CompileIQError, match="not valid JSON"):
        Landscape.load(write(tmp_path, "{ nope"))
    with pytest.raises(CompileIQError, match="cannot read"):
        Landscape.load(tmp_path / "absent.json")


@pytest.mark.unit
def test_committed_sample_is_synthetic_and_well_formed():
    land = Landscape.load(LANDSCAPES / "sample_small.json")
    assert land.synthetic and "SYNTHETIC" in land.meta["description"]
    assert land.complete and len(land) == 288
    best = land.best_valid()
    assert len(best.flags) >= 3 and best.speedup > 1.3
    singles = [p for p in land.points() if sum(1 for c in p.choices if c) == 1 and p.valid]
    assert max(p.speedup for p in singles) < 0.95 * best.speedup  # no single flag reaches the best
    assert any(p.status == "build_failed" for p in land.points())
    assert any(p.status == "wrong_result" for p in land.points())
    # every token is a real nvcc flag of the catalogue
    space = load_space("nvcc", "NVIDIA", "13.0.88", include=tuple(d.name for d in land.dimensions))
    by_name = {d.name: d for d in space.dimensions}
    for d in land.dimensions:
        assert set(d.values) <= set(by_name[d.name].values)


def _record_module():
    spec = importlib.util.spec_from_file_location("landscape_record", LANDSCAPES / "record.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # dataclasses look their module up
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.unit
def test_recorder_subspaces_use_catalogue_tokens():
    rec = _record_module()
    for kernel in rec.KERNELS:
        dims = rec.subspace_dimensions(kernel, "13.0.88")
        size = math.prod(len(v) for _, v in dims)
        if rec.KERNELS[kernel].setup is None:  # the hand-written kernels: full factorial sub-spaces
            assert 500 <= size <= 2000, (kernel, size)
        else:  # the learning design's: every single-token dimension of the space, sampled
            assert [n for n, _ in dims] == list(rec.LEARN_DIMENSIONS), kernel
        assert (LANDSCAPES / "kernels" / rec.KERNELS[kernel].source).is_file()
    assert sum(1 for k in rec.KERNELS.values() if k.setup is not None) >= 21  # issue 23: at least 30 kernels in all


@pytest.mark.unit
def test_the_learning_design_has_every_single_value_the_whole_core_and_random_points():
    rec = _record_module()
    dims = rec.subspace_dimensions("rmsnorm", "13.0.88")
    points, how = rec.learn_points(dims, 60, seed=1)
    assert how.startswith("learn") and len(set(points)) == len(points)
    assert tuple([0] * len(dims)) in points
    changed = [sum(1 for c in p if c) for p in points]
    assert changed.count(1) == sum(len(v) - 1 for _, v in dims)  # every single value
    names = [n for n, _ in dims]
    core = [d for d, n in enumerate(names) if n in rec.LEARN_CORE or n in rec.LEARN_CORE_VALUES]
    allowed = {
        d: set(range(rec.LEARN_CORE[names[d]]))
        if names[d] in rec.LEARN_CORE
        else {dims[d][1].index(tuple(v)) for v in rec.LEARN_CORE_VALUES[names[d]]}
        for d in core
    }
    in_core = [p for p in points if all(c in allowed[d] if d in allowed else c == 0 for d, c in enumerate(p))]
    assert len(in_core) == math.prod(len(a) for a in allowed.values()) == 768  # the complete core sub-landscape
    outside = [p for p in points if sum(1 for d, c in enumerate(p) if c and d not in core) >= 2]
    assert len(outside) >= 40  # random combinations across the other dimensions


@pytest.mark.unit
def test_recorder_sampling_keeps_singles_and_doubles():
    rec = _record_module()
    dims = rec.subspace_dimensions("sgemm", "13.0.88")
    points, how = rec.enumerate_points(dims, 400, seed=1)
    assert how.startswith("sampled") and len(points) == 400 and len(set(points)) == 400
    assert tuple([0] * len(dims)) in points
    changed = [sum(1 for c in p if c) for p in points]
    n_single = sum(len(v) - 1 for _, v in dims)
    assert changed.count(1) == n_single
    full, how = rec.enumerate_points(dims, 10_000, seed=1)
    assert how == "full" and len(full) == math.prod(len(v) for _, v in dims)


@pytest.mark.unit
@pytest.mark.parametrize(
    "recorded,version",
    [
        ("13.0.88", "13.0.88"),  # record.py
        (["Build cuda_13.0.r13.0/compiler.36424714_0"], "13.0"),  # record_project.py before it stored the version
        (["Cuda compilation tools, release 12.4, V12.4.131"], "12.4"),
        (None, "0"),
    ],
)
def test_the_recording_compilers_version_reads_as_a_version_whatever_the_recorder_wrote(tmp_path, recorded, version):
    """A replayed tune writes the landscape's compiler version into its TOML entry: a replay of
    mc_rdc_learn.json (nvcc's --version line as a list) failed at that write on a suite of 24 replayed targets."""
    doc = synthetic_doc()
    doc["meta"]["nvcc_version"] = recorded
    assert Landscape.load(write(tmp_path, doc)).compiler_version == version


@pytest.mark.unit
def test_every_committed_landscape_names_a_compiler_version():
    for path in sorted(LANDSCAPES.glob("*.json")):
        land = Landscape.load(path)
        assert land.synthetic or land.compiler_version.startswith("13.0"), path.name
