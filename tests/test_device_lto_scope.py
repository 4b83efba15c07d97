"""Issue 34: apply exactly what was measured. Device LTO acts on a target's CUDA code only (its C++ files get no
host LTO), per-file flags reach only the target they were tuned for (never another target compiling the same
file), a static library's device LTO reaches only the consumer the tune measured through, and of several
architectures' entries for one target a stated rule picks the one that applies. One CMake rule serves the
apply and the variant trees. Real configures (Ninja and Ninja Multi-Config) and, where this machine's toolkit
can device-link with -dlto (conftest.lto_nvcc), real builds."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from compileiq_cmake.flags.probe import probe_device_lto
from compileiq_cmake.project.fragment import render_fragment
from compileiq_cmake.results.toml_io import write_entry

from conftest import HAVE_NVCC, cmake_dir, compile_commands, configure, copy_project
from test_result_file import make_entry

pytestmark = [
    pytest.mark.skipif(not HAVE_NVCC, reason="nvcc is not installed"),
    pytest.mark.skipif(shutil.which("ninja") is None, reason="ninja is not installed"),
]
APPLY = "compileiq_apply.cmake"


def _apply(src: Path, build: Path, *defs: str, generator: str = "Ninja") -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [
            "cmake",
            "-S",
            str(src),
            "-B",
            str(build),
            "-G",
            generator,
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / APPLY}",
            *defs,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def _commands(build: Path, config: str = "") -> dict[tuple[str, str], str]:
    """(target, source path relative to the project) -> compile command; with `config`, that configuration's
    commands of a multi-config tree only."""
    out = {}
    for e in compile_commands(build):
        m = re.search(r"CMakeFiles/([^/]+)\.dir/(?:(Debug|Release|RelWithDebInfo|MinSizeRel)/)?", e["command"])
        assert m, e["command"]
        if config and m.group(2) != config:
            continue
        path = Path(e["file"]).resolve()
        project = next(
            p for p in path.parents if (p / "CMakeLists.txt").is_file() and not (p.parent / "CMakeLists.txt").is_file()
        )
        out[(m.group(1), path.relative_to(project).as_posix())] = e["command"]
    return out


def _device_links(build: Path) -> dict[str, str]:
    """Per target (and configuration, "<target>/<config>" in a multi-config tree): the flags of its device-link
    step, from the Ninja rules."""
    links = {}
    for ninja in [*build.glob("*.ninja"), *build.glob("CMakeFiles/*.ninja")]:
        lines = ninja.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"build CMakeFiles/([^/]+)\.dir/(?:([A-Za-z]+)/)?cmake_device_link\.o:", line)
            if not m:
                continue
            edge = []
            for follow in lines[i + 1 :]:
                if not follow.startswith(" "):
                    break
                edge.append(follow.strip())
            key = m.group(1) + (f"/{m.group(2)}" if m.group(2) else "")
            links[key] = " ".join(v for v in edge if v.startswith(("LINK_FLAGS", "LANGUAGE_COMPILE_FLAGS")))
    return links


def _entry(versions, target: str, **kw):
    return make_entry(target=target, compiler_version=versions.cuda, sources_sha256="", **kw)


MIXED = dict(flags=("-Xptxas=-O1",), device_lto=True, sources=({"path": "src/kern.cu", "flags": ["--use_fast_math"]},))


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.parametrize("generator", ["Ninja", "Ninja Multi-Config"])
def test_device_lto_is_for_cuda_code_only_and_per_file_flags_stay_on_their_target(
    tmp_path, compiler_versions, generator
):
    """The issue's CI case: mixed_bench (main.cpp, ref.cpp, kern.cu, helpers.cu; separable; architecture 90)
    with device_lto, a target flag and a per-file flag on kern.cu: its .cpp files have no -flto, its CUDA files
    make LTO IR (code=lto_90) beside the machine code, its device link has -dlto (and the ptxas option, which
    acts there under LTO); kern_test, which compiles the same kern.cu, keeps exactly the compile lines and the
    device link of a plain configure, in Ninja and in Ninja Multi-Config (whose other configurations keep
    theirs too)."""
    src = copy_project("mixed_rdc", tmp_path / "mixed_rdc")
    arch = "-DCMAKE_CUDA_ARCHITECTURES=90"
    multi = generator == "Ninja Multi-Config"
    config = "Release" if multi else ""
    types = ("-DCMAKE_CONFIGURATION_TYPES=Debug;Release",) if multi else ("-DCMAKE_BUILD_TYPE=Release",)
    plain = tmp_path / "plain"
    proc = subprocess.run(
        [
            "cmake",
            "-S",
            str(src),
            "-B",
            str(plain),
            "-G",
            generator,
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
            arch,
            *types,
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    write_entry(src / "compileiq.toml", _entry(compiler_versions, "mixed_bench", **MIXED))
    rel = tmp_path / "rel"
    proc = _apply(src, rel, arch, *types, generator=generator)
    said = " ".join(proc.stdout.split())
    assert (
        "device LTO of its CUDA code only: code=lto_90 at compile, -dlto at the device link of mixed_bench "
        "with -Xptxas=-O1"
    ) in said, said[-3000:]
    assert "1 of 1 source files of mixed_bench got their own flags: src/kern.cu" in said, said[-3000:]
    got, before = _commands(rel, config), _commands(plain, config)
    assert set(got) == set(before)
    for host in ("src/main.cpp", "src/ref.cpp"):
        assert "-flto" not in got[("mixed_bench", host)] and got[("mixed_bench", host)] == before[("mixed_bench", host)]
    for cu in ("src/kern.cu", "src/helpers.cu"):
        line = got[("mixed_bench", cu)]
        assert "code=lto_90" in line and "code=[compute_90,sm_90]" in line and "-Xptxas=-O1" in line, line
        assert ("--use_fast_math" in line) is (cu == "src/kern.cu"), line
    others = {k: v for k, v in got.items() if k[0] != "mixed_bench"}
    assert others == {k: v for k, v in before.items() if k[0] != "mixed_bench"}  # kern_test, devlib, lib_bench_*
    links, plain_links = _device_links(rel), _device_links(plain)
    suffix = f"/{config}" if multi else ""
    assert "-dlto" in links[f"mixed_bench{suffix}"] and "-Xptxas=-O1" in links[f"mixed_bench{suffix}"], links
    assert (
        links[f"kern_test{suffix}"] == plain_links[f"kern_test{suffix}"] and "-dlto" not in links[f"kern_test{suffix}"]
    )
    if multi:  # the Debug configuration is the plain one, everywhere
        assert _commands(rel, "Debug") == _commands(plain, "Debug")
        assert links["mixed_bench/Debug"] == plain_links["mixed_bench/Debug"]


@pytest.mark.cmake
@pytest.mark.cuda
def test_a_static_librarys_device_lto_reaches_the_measured_consumer_only(tmp_path, compiler_versions):
    """devlib (STATIC, separable) tuned with device LTO through lib_bench_a: its CUDA files make LTO IR beside
    their machine code, lib_bench_a's device link gets -dlto, lib_bench_b (never measured) links the machine
    code as before, and the status line names both. The variant tree does the same (one rule). An entry that
    names no measured consumer (an older tune's) or one the project lacks is refused, saying why."""
    src = copy_project("mixed_rdc", tmp_path / "mixed_rdc")
    arch, release = "-DCMAKE_CUDA_ARCHITECTURES=90", "-DCMAKE_BUILD_TYPE=Release"
    write_entry(
        src / "compileiq.toml",
        _entry(compiler_versions, "devlib", flags=("-maxrregcount=64",), device_lto=True, device_link=("lib_bench_a",)),
    )
    proc = _apply(src, tmp_path / "rel", arch, release)
    said = " ".join(proc.stdout.split())
    assert (
        "-dlto at the device link of lib_bench_a with -maxrregcount=64 (measured there); lib_bench_b link its "
        "machine code without device LTO"
    ) in said, said[-3000:]
    got, links = _commands(tmp_path / "rel"), _device_links(tmp_path / "rel")
    assert all("code=lto_90" in got[("devlib", f)] for f in ("src/lib/lib_kern.cu", "src/lib/lib_helpers.cu"))
    assert "-dlto" in links["lib_bench_a"] and "-maxrregcount=64" in links["lib_bench_a"], links
    assert "-dlto" not in links["lib_bench_b"] and "-maxrregcount" not in links["lib_bench_b"], links
    # the variant tree: the same rule, the consumer named by the tune (the benchmark's owner)
    tree = tmp_path / "variant"
    tree.mkdir()
    (tree / "frag.cmake").write_text(
        render_fragment("devlib", "CUDA", "90", ("-maxrregcount=64", "-dlto"), ("lib_bench_a",))
    )
    proc = configure(
        src,
        tree,
        release,
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_variant.cmake'}",
        f"-DCOMPILEIQ_VARIANT_FRAGMENT={tree / 'frag.cmake'}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    vlinks = _device_links(tree)
    assert "-dlto" in vlinks["lib_bench_a"] and "-dlto" not in vlinks["lib_bench_b"], vlinks
    assert "code=lto_90" in _commands(tree)[("devlib", "src/lib/lib_kern.cu")]
    # refused: no consumer recorded, or one this project does not define
    for device_link, says in (
        ((), "names no consumer whose device link was measured"),
        (("gone_bench",), "measured at the device link of gone_bench, which this project does not define"),
    ):
        write_entry(
            src / "compileiq.toml", _entry(compiler_versions, "devlib", device_lto=True, device_link=device_link)
        )
        out = tmp_path / f"refused-{len(device_link)}"
        proc = _apply(src, out, arch, release)
        assert says in " ".join(proc.stderr.split()), proc.stderr[-2000:]
        assert not any("lto_90" in c for c in _commands(out).values())
        assert "-dlto" not in " ".join(_device_links(out).values())


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.parametrize("order", ["older first", "newer first"])
def test_of_two_architectures_entries_the_newest_built_applies_whatever_the_file_order(
    tmp_path, compiler_versions, order
):
    """Entries for sm_80 and sm_90 of one target, a build of both: the sm_90 entry applies to both (nvcc takes
    one set of flags per compile), whichever comes first in the file, and the lines say which entry went to
    which architectures; a build of sm_80 alone gets the sm_80 entry."""
    src = copy_project("mixed_rdc", tmp_path / "mixed_rdc")
    e80 = _entry(compiler_versions, "mixed_bench", arch="80", flags=("-Xptxas=-O2",))
    e90 = _entry(compiler_versions, "mixed_bench", arch="90", flags=("-Xptxas=-O1",))
    for e in (e80, e90) if order == "older first" else (e90, e80):
        write_entry(src / "compileiq.toml", e)
    proc = _apply(src, tmp_path / "both", "-DCMAKE_CUDA_ARCHITECTURES=80;90", "-DCMAKE_BUILD_TYPE=Release")
    said = " ".join(proc.stdout.split())
    assert "applied 1 tuned flag to mixed_bench (CUDA sm_90 entry, for sm_80, sm_90)" in said, said[-3000:]
    assert "flags for mixed_bench tuned for sm_80 not applied: those tuned for sm_90 apply" in said, said[-3000:]
    line = _commands(tmp_path / "both")[("mixed_bench", "src/kern.cu")]
    assert "-Xptxas=-O1" in line and "-Xptxas=-O2" not in line
    proc = _apply(src, tmp_path / "eighty", "-DCMAKE_CUDA_ARCHITECTURES=80", "-DCMAKE_BUILD_TYPE=Release")
    assert "-Xptxas=-O2" in _commands(tmp_path / "eighty")[("mixed_bench", "src/kern.cu")]


# Layouts of tests/projects where per-file flags apply: (project, target, a CUDA source of it, configure args)
PER_FILE_LAYOUTS = {
    "separable": ("sep_bench", "src/main.cu", ()),
    "cpp_cuda": ("cpp_bench", "src/kernels_a.cpp", ()),
    "hostile_cuda": ("hostile_kernels", "src/scale.cu", ()),
    "libs_layout": ("kern_static", "src/static_kernels.cu", ()),
    "arch_by_hand": ("handarch_bench", "src/kernels.cu", ()),
    "mixed_rdc": ("kern_test", "src/kern.cu", ()),
}
# Layouts where device LTO applies: (project, target, the consumer measured for a library, configure args)
LTO_LAYOUTS = {
    "separable": ("sep_bench", "", ()),
    "hostile_cuda": ("hostile_kernels", "hostile_bench", ("-DCMAKE_POLICY_DEFAULT_CMP0105=NEW",)),
    "mixed_rdc/exe": ("mixed_bench", "", ()),
    "mixed_rdc/lib": ("devlib", "lib_bench_b", ()),
}


def _plain_and_applied(tmp_path: Path, project: str, entry, extra: tuple[str, ...]):
    src = copy_project(project, tmp_path / project)
    defs = ("-DCMAKE_BUILD_TYPE=Release", *extra)
    if "CMAKE_CUDA_ARCHITECTURES" not in " ".join(extra) and project != "arch_by_hand":
        defs += ("-DCMAKE_CUDA_ARCHITECTURES=90",)
    proc = configure(src, tmp_path / "plain", *defs)
    assert proc.returncode == 0, proc.stderr[-2000:]
    write_entry(src / "compileiq.toml", entry)
    applied = _apply(src, tmp_path / "rel", *defs)
    return tmp_path / "plain", tmp_path / "rel", applied


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.parametrize("project", list(PER_FILE_LAYOUTS))
def test_per_file_flags_change_one_file_of_one_target_on_every_layout(tmp_path, compiler_versions, project):
    """On each layout: an entry with a per-file flag changes that file's compile line for the tuned target
    and nothing else of the build (every other command, of that target or another, stays as a plain configure
    has it)."""
    target, source, extra = PER_FILE_LAYOUTS[project]
    arch = "90"
    entry = _entry(
        compiler_versions, target, arch=arch, flags=(), sources=({"path": source, "flags": ["-Xptxas=-dlcm=cs"]},)
    )
    plain, rel, proc = _plain_and_applied(tmp_path, project, entry, extra)
    assert f"got their own flags: {source}" in " ".join(proc.stdout.split()), proc.stdout[-2000:] + proc.stderr[-2000:]
    got, before = _commands(rel), _commands(plain)
    changed = {k for k in got if got[k] != before.get(k)}
    assert changed == {(target, source)}, changed
    assert "-Xptxas=-dlcm=cs" in got[(target, source)]


@pytest.mark.cmake
@pytest.mark.cuda
@pytest.mark.parametrize("layout", list(LTO_LAYOUTS))
def test_device_lto_changes_only_the_targets_cuda_code_and_one_device_link_on_every_layout(
    tmp_path, compiler_versions, layout
):
    """On each relocatable layout: a device-LTO entry adds LTO IR to the tuned target's CUDA compile lines
    only (no other line of the build changes, its host files get no -flto) and -dlto to one device link: the
    target's own, or for a static library the measured consumer's."""
    target, consumer, extra = LTO_LAYOUTS[layout]
    project = layout.split("/")[0]
    entry = _entry(compiler_versions, target, flags=(), device_lto=True, device_link=(consumer,) if consumer else ())
    plain, rel, proc = _plain_and_applied(tmp_path, project, entry, extra)
    assert "its CUDA code only: code=lto_90" in proc.stdout, proc.stdout[-2000:] + proc.stderr[-2000:]
    got, before = _commands(rel), _commands(plain)
    changed = {k for k in got if got[k] != before.get(k)}
    assert changed and all(k[0] == target for k in changed), changed
    assert all("code=lto_90" in got[k] for k in changed)
    assert not any("-flto" in c for c in got.values())
    links, plain_links = _device_links(rel), _device_links(plain)
    linker = consumer or target
    assert "-dlto" in links[linker], links
    assert {k: v for k, v in links.items() if k != linker} == {k: v for k, v in plain_links.items() if k != linker}


@pytest.mark.cmake
@pytest.mark.cuda
def test_under_an_old_policy_device_lto_is_refused_with_the_way_to_get_it(tmp_path, compiler_versions):
    """hostile_cuda requires CMake 3.10: policy CMP0105 is not NEW, and CMake passes no link options to its
    device links (-dlto would silently not reach them). The apply refuses the device-LTO entry saying how to
    configure for it, the variant tree records the same refusal (the tune does not offer device LTO), and with
    -DCMAKE_POLICY_DEFAULT_CMP0105=NEW both accept it (the previous test)."""
    entry = _entry(compiler_versions, "hostile_kernels", flags=(), device_lto=True, device_link=("hostile_bench",))
    plain, rel, proc = _plain_and_applied(tmp_path, "hostile_cuda", entry, ())
    said = " ".join(proc.stderr.split())
    assert "policy CMP0105" in said and "-DCMAKE_POLICY_DEFAULT_CMP0105=NEW" in said, said[-2000:]
    assert _commands(rel) == _commands(plain) and _device_links(rel) == _device_links(plain)
    tree = tmp_path / "variant"
    tree.mkdir()
    (tree / "frag.cmake").write_text(render_fragment("hostile_kernels", "CUDA", "90", ()))
    proc = configure(
        tmp_path / "hostile_cuda",
        tree,
        "-DCMAKE_BUILD_TYPE=Release",
        f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={cmake_dir() / 'compileiq_variant.cmake'}",
        f"-DCOMPILEIQ_VARIANT_FRAGMENT={tree / 'frag.cmake'}",
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "device_lto_refusal=CMake passes no link options" in (tree / "compileiq_variant_info.txt").read_text()


@pytest.mark.cmake
@pytest.mark.cuda
def test_the_mixed_project_builds_with_device_lto_and_the_host_link_has_no_lto(tmp_path, compiler_versions, lto_nvcc):
    """Built for real with an nvcc that can device-link with -dlto: the executable with host .cpp files and the
    static library's measured consumer link (the host link gets no -flto), and the device link uses the LTO IR:
    its code differs from a plain build's."""
    src = copy_project("mixed_rdc", tmp_path / "mixed_rdc")
    defs = ("-DCMAKE_BUILD_TYPE=Release", "-DCMAKE_CUDA_ARCHITECTURES=90", f"-DCMAKE_CUDA_COMPILER={lto_nvcc}")
    write_entry(src / "compileiq.toml", _entry(compiler_versions, "mixed_bench", flags=(), device_lto=True))
    write_entry(
        src / "compileiq.toml",
        _entry(compiler_versions, "devlib", flags=(), device_lto=True, device_link=("lib_bench_a",)),
    )
    rel = tmp_path / "rel"
    _apply(src, rel, *defs)
    build = subprocess.run(["cmake", "--build", str(rel), "-v"], capture_output=True, text=True)
    assert build.returncode == 0, build.stdout[-4000:] + build.stderr[-2000:]
    assert "-flto" not in build.stdout
    dlinks = [line for line in build.stdout.splitlines() if " -dlink " in line]
    assert any("-dlto" in line and "mixed_bench.dir" in line for line in dlinks), dlinks
    assert any("-dlto" in line and "lib_bench_a.dir" in line for line in dlinks), dlinks
    assert not any("-dlto" in line and ("lib_bench_b.dir" in line or "kern_test.dir" in line) for line in dlinks)
    plain = tmp_path / "plain"
    assert (
        configure(
            src.parent / "mixed_rdc",
            plain,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DCMAKE_CUDA_ARCHITECTURES=90",
            f"-DCMAKE_CUDA_COMPILER={lto_nvcc}",
        ).returncode
        == 0
    )
    assert subprocess.run(["cmake", "--build", str(plain)], capture_output=True).returncode == 0
    linked = "CMakeFiles/mixed_bench.dir/cmake_device_link.o"
    assert (rel / linked).read_bytes() != (plain / linked).read_bytes()


@pytest.mark.cmake
@pytest.mark.cuda
def test_the_device_lto_probe_says_whether_a_dlto_link_works(tmp_path, lto_nvcc):
    """The tune offers device LTO only where a -dlto device link works on the tuning machine: the probe passes
    with an nvcc that links, and fails, with nvlink's own words, with one whose device link fails."""
    assert probe_device_lto(lto_nvcc, "90").ok
    broken = tmp_path / "nvcc"
    broken.write_text(
        f'#!/bin/sh\ncase " $* " in *" -dlink "*) echo "nvlink fatal   : elfLink linker library load error" >&2; '
        f'exit 1;; esac\nexec "{lto_nvcc}" "$@"\n'
    )
    broken.chmod(0o755)
    outcome = probe_device_lto(str(broken), "90", tmp_path / "probe.json")
    assert not outcome.ok and "elfLink linker library load error" in outcome.message
    assert not probe_device_lto(str(broken), "90", tmp_path / "probe.json").ok  # from the cache
