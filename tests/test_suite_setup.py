"""A suite's setup paid once (issue 38): the baselines of all its targets in one parallel build, in a tree of
their own that no trial builds in, and the static screening of the targets after those in flight run ahead
in one pass into the screening cache, so that each target's own screening finds its values there."""

from __future__ import annotations

from pathlib import Path

import pytest

from compileiq_cmake.flags import load_space
from compileiq_cmake.flags.fingerprint import find_tool
from compileiq_cmake.flags.screening import prepare_cuda_space
from compileiq_cmake.model.errors import UsageError
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.nvcc_command import tokens
from compileiq_cmake.project.variant_settings import VariantSettings
from compileiq_cmake.tune.tree_pool import TreePool

from conftest import configure, needs_nvcc

KERNEL = """#include <cstdio>
__global__ void k_{name}(const float* a, float* c, int n) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = sqrtf(a[i]) / (a[i] + {k}.0f) + expf(a[i] * 0.5f);
}}
int main() {{ printf("time_ms=1.0\\nPASS\\n"); return 0; }}
"""


def _collection(root: Path) -> Path:
    """Three one-file CUDA programs; `c` hard-codes its architectures (the variant trees build sm_90 for it too)."""
    src = root / "src"
    src.mkdir()
    lists = "cmake_minimum_required(VERSION 3.24)\nproject(coll LANGUAGES CXX CUDA)\n"
    for k, name in enumerate("abc"):
        (src / f"{name}.cu").write_text(KERNEL.format(name=name, k=k + 1))
        lists += f"add_executable({name} {name}.cu)\n"
    lists += "set_target_properties(c PROPERTIES CUDA_ARCHITECTURES 75)\n"
    (src / "CMakeLists.txt").write_text(lists)
    return src


@pytest.mark.cmake
@pytest.mark.cuda
@needs_nvcc
@pytest.mark.skipif(find_tool("cuobjdump") is None, reason="cuobjdump missing: pip install nvidia-cuda-cuobjdump")
def test_one_build_holds_every_targets_baseline_and_the_screening_runs_ahead_into_the_cache(tmp_path):
    src = _collection(tmp_path)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90").returncode == 0
    pool = TreePool(
        build / "compileiq" / "suite" / "trees",
        ("a", "b", "c"),
        {"a": ("a", False), "b": ("b", False), "c": ("c", False)},
    )
    settings, _ = VariantSettings.from_user_tree(src, build, "", "")
    _, model, _ = pool.own_build(settings, "a", src, build, tmp_path / "logs")
    from dataclasses import replace

    settings = replace(settings, cuda_arch="90")
    pool.begin("a")
    base, made = pool.baselines(settings, "a", "CUDA", model, tmp_path / "logs")
    again, made_again = pool.baselines(settings, "b", "CUDA", model, tmp_path / "logs")
    assert made and not made_again and again is base  # made once, by the first target that asked
    assert base.result.ok and base.targets == ("a", "b", "c") and base.holds("b"), base
    compiled = (tmp_path / "logs" / f"{base.tree.path.name}-compiled.log").read_text().splitlines()
    assert len(compiled) == 1 and sorted(Path(o).name for o in compiled[0].split()) == ["a.cu.o", "b.cu.o", "c.cu.o"]
    # every target built for the trees' architecture, the hard-coded list of c replaced as in any variant tree
    for name in "abc":
        command = tokens(base.tree.compile_commands((src / f"{name}.cu",), name)[0])
        archs = [t for t in command if "compute_" in t or "sm_" in t]
        assert archs and all("90" in t and "75" not in t for t in archs), command
    # a target's baseline "build" there builds nothing and costs its share of the one build; no trial in it
    again = base.tree.build(("b",), jobs=2, timeout=60)
    # priced as building b alone would take: its compile and link steps in Ninja's log of the one build
    assert sorted(base.tree.target_seconds) == ["a", "b", "c"] and again.ok
    assert 0 < again.seconds == base.tree.target_seconds["b"] <= base.result.seconds
    assert len((tmp_path / "logs" / f"{base.tree.path.name}-compiled.log").read_text().splitlines()) == 1
    with pytest.raises(UsageError, match="baselines"):
        base.tree.write_flags("b", "CUDA", "90", ("--use_fast_math",))
    assert pool.shared_seconds("a") >= base.result.seconds and pool.shared_seconds("b") < base.result.seconds
    # the screening ahead: the targets after the one that began (a), in the suite's order, into the cache
    space = load_space("nvcc", "NVIDIA", "13.0", include=("store_cache", "prec_div", "use_fast_math"), arch="90")
    nvcc = model.toolchains["CUDA"].path
    pool.ahead_seconds = 600.0  # (a loaded 2-core machine: the default 30 s per target may leave values to b)
    assert pool.screen_ahead(base, space, nvcc, "90", build)
    assert not pool.screen_ahead(base, space, nvcc, "90", build)  # once per suite
    pool.ahead.join(timeout=600)
    report = pool.end_screen_ahead()
    assert report["targets"] == ["b", "c"] and report["compiles"] > 0 and not report["stopped"], report
    # b's own screening later, from another tree of the pool: every value answered by the cache
    tree = VariantTree(build / "compileiq" / "suite" / "trees", "tree-0", settings.cmake, record=("a", "b", "c"))
    tree.prepare(settings, "b", "CUDA")
    entries = tree.compile_commands((src / "b.cu",), "b")
    own = prepare_cuda_space(space, entries, nvcc, "90", build, "b", jobs=2, decisions=tree.decisions("b"))
    assert own.screen is not None and own.screen.compiles == 0 and own.screen.cache_hits > 0, own.screen.summary()
    cold = prepare_cuda_space(
        space,
        tree.compile_commands((src / "a.cu",), "a"),
        nvcc,
        "90",
        build,
        "a",
        jobs=2,
        decisions=tree.decisions("a"),
    )
    assert cold.screen.compiles > 0  # a began before the screening ahead started: left to its own screening


@pytest.mark.unit
def test_a_target_waits_for_the_screening_ahead_only_while_it_screens_that_target():
    """A target whose setup reaches its screening while the suite's screening ahead compiles that very target
    waits for it (its values then come from the cache) instead of compiling them a second time beside it;
    bounded by the seconds it may spend; no wait for a target the thread is not on."""
    import threading
    import time

    from compileiq_cmake.tune.suite_screen import ScreenAhead

    ahead = ScreenAhead(None, ("a", "b"), None, "nvcc", "90", Path("."), lambda _: False, None, 1)
    t0 = time.monotonic()
    assert not ahead.wait_for("b", 5) and time.monotonic() - t0 < 1  # not on it: no wait
    ahead._screening("b")
    threading.Timer(0.3, ahead._screening, ("c",)).start()
    assert ahead.wait_for("b", 10) and 0.25 <= time.monotonic() - t0 < 5
    t1 = time.monotonic()
    assert not ahead.wait_for("c", 0.2) and 0.15 <= time.monotonic() - t1 < 2  # still on it at the bound


@pytest.mark.unit
def test_the_screening_ahead_runs_its_compiles_at_a_lower_priority_than_the_trials_builds(monkeypatch):
    """The screening ahead shares the cores with the targets in flight: its thread (and so the compiles it
    starts) runs niced, the rest of the process not; targets that began are left to their own screening."""
    import os
    import threading
    from types import SimpleNamespace

    from compileiq_cmake.tune import suite_screen

    seen = {}

    def fake_prepare(space, entries, nvcc, arch, build_dir, name, **kw):
        seen[name] = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
        return SimpleNamespace(screen=SimpleNamespace(compiles=1, cache_hits=0))

    cuda = SimpleNamespace(primary_language="CUDA", sources_in=lambda lang: (Path("x.cu"),))
    monkeypatch.setattr(suite_screen, "prepare_cuda_space", fake_prepare)
    monkeypatch.setattr(
        suite_screen.file_api, "read_codemodel", lambda path: SimpleNamespace(targets={"a": cuda, "b": cuda, "c": cuda})
    )
    base = SimpleNamespace(
        path=Path("."), compile_commands=lambda sources, name: [{"file": "x.cu"}], decisions=lambda name: None
    )
    before = os.getpriority(os.PRIO_PROCESS, threading.get_native_id())
    ahead = suite_screen.ScreenAhead(base, ("a", "b", "c"), None, "nvcc", "90", Path("."), lambda n: n == "a", None, 2)
    ahead.start()
    ahead.join(timeout=30)
    assert sorted(seen) == ["b", "c"] and ahead.report.targets == ["b", "c"] and ahead.report.compiles == 2
    assert all(p >= min(19, before + suite_screen.AHEAD_NICE) for p in seen.values()), (seen, before)
    assert os.getpriority(os.PRIO_PROCESS, threading.get_native_id()) == before  # the caller's thread: not niced


@pytest.mark.unit
def test_a_targets_baseline_build_is_priced_as_its_objects_in_parallel_then_its_link(tmp_path):
    """From Ninja's log of the one build: a target of four 10 s objects and a 1 s link, built 4 jobs at a time,
    costs about 11 s (not 41 s of summed steps); a target the log does not show gets the build's share."""
    from compileiq_cmake.project.baseline_tree import BaselineTree

    tree = BaselineTree(tmp_path, "base-x", "cmake")
    tree.path.mkdir()
    lines = ["# ninja log v5"] + [f"{0}\t{10000}\t0\tCMakeFiles/big.dir/f{i}.cu.o\tabc" for i in range(4)]
    lines += ["10000\t11000\t0\tbig\tdef", "0\t2000\t0\tCMakeFiles/one.dir/o.cu.o\tx", "2000\t2500\t0\tbin/one\ty"]
    (tree.path / ".ninja_log").write_text("\n".join(lines) + "\n")
    tree.built = frozenset({"big", "one", "unseen"})
    tree.estimate_seconds(12.0, 4, {"big": (Path("big"),), "one": (Path("bin/one"),)})
    assert tree.target_seconds["big"] == pytest.approx(11.0) and tree.target_seconds["one"] == pytest.approx(2.5)
    assert tree.target_seconds["unseen"] == pytest.approx(12.0)  # min(12, 12 x 4 / 3)
    assert tree.build(("big", "one"), jobs=1, timeout=1).seconds == pytest.approx(13.5)


@pytest.mark.cmake
def test_a_target_that_does_not_build_leaves_the_others_in_the_one_baseline_build(tmp_path):
    """A collection with one broken program: the one build goes on past it (keep going), holds the others'
    baselines, and says which target builds its own (and will fail there, with its own error)."""
    src = tmp_path / "src"
    src.mkdir()
    lists = "cmake_minimum_required(VERSION 3.24)\nproject(hc LANGUAGES CXX)\n"
    for name in ("a", "b", "broken"):
        body = "#error this program does not build\n" if name == "broken" else ""
        (src / f"{name}.cpp").write_text(body + "int main() { return 0; }\n")
        lists += f"add_executable({name} {name}.cpp)\n"
    (src / "CMakeLists.txt").write_text(lists)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    pool = TreePool(
        build / "compileiq" / "suite" / "trees",
        ("a", "broken", "b"),
        {"a": ("a", False), "broken": ("broken", False), "b": ("b", False)},
    )
    from compileiq_cmake.execute.build import CoreShare

    pool.cores = CoreShare(1)  # one step at a time, in order: without keep-going b would never be built
    settings, _ = VariantSettings.from_user_tree(src, build, "", "")
    _, model, _ = pool.own_build(settings, "a", src, build, tmp_path / "logs")
    base, made = pool.baselines(settings, "a", "CXX", model, tmp_path / "logs")
    assert made and base.tree is not None and base.targets == ("a", "b"), base
    assert "broken did not build with the project's own flags" in base.why and "builds its own baseline" in base.why
    assert base.tree.build(("b",), jobs=1, timeout=60).ok and not base.tree.build(("broken",), jobs=1, timeout=60).ok
