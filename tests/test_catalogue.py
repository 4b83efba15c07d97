"""The nvcc catalogue as data, its interaction rules, the project adaptation, ACF, and the probe against the
installed nvcc."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from compileiq_cmake.flags import load_space, validate_flags
from compileiq_cmake.flags import space as space_module
from compileiq_cmake.flags.catalogue import adapt_to_project, canonical_flags
from compileiq_cmake.flags.fingerprint import find_tool
from compileiq_cmake.flags.probe import probe_space
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.project.nvcc_command import normalize

from conftest import needs_nvcc

NVCC = shutil.which("nvcc") or "nvcc"
ALL = load_space("nvcc", "NVIDIA", "13.0.88", include=("experimental",))


def _names(space: FlagSpace) -> set[str]:
    return {d.name for d in space.dimensions}


@pytest.mark.unit
def test_catalogue_tokens_are_single_plain_tokens_and_never_debug():
    for d in ALL.dimensions:
        assert d.values[0] == ()
        for value in d.values[1:]:
            for tok in value:
                assert " " not in tok and validate_flags("nvcc", [tok])
                assert tok not in ("-G", "-g", "--device-debug", "-lineinfo", "--generate-line-info")
                assert not re.fullmatch(r"-X(ptxas|cicc)", tok), "use the -Xptxas=... form (CMake de-duplicates)"


@pytest.mark.unit
def test_experimental_dimensions_only_when_asked():
    default = load_space("nvcc", "NVIDIA", "13.0")
    assert not any(d.experimental for d in default.dimensions)
    assert any("experimental" in note for note in default.dropped)
    assert {"unroll_count", "ptxas_cloning", "nvvm_latest", "no_device_inline", "disable_licm"} <= _names(ALL)
    assert _names(default) < _names(ALL)
    by_name = load_space("nvcc", "NVIDIA", "13.0", include=("unroll_count", "restrict"))
    assert _names(by_name) == {"unroll_count", "restrict"}
    both = load_space("nvcc", "NVIDIA", "13.0", include=("restrict", "experimental"))
    assert "restrict" in _names(both) and "ptxas_opt_level" not in _names(both) and "unroll_count" in _names(both)
    no_exp = load_space("nvcc", "NVIDIA", "13.0", include=("experimental",), exclude=("experimental",))
    assert _names(no_exp) == _names(default)


@pytest.mark.unit
def test_version_and_arch_filters(monkeypatch):
    assert "ofast_compile" not in _names(load_space("nvcc", "NVIDIA", "12.4", include=("experimental",)))
    data = space_module._read_family("nvcc")
    data["dimension"][0] = {**data["dimension"][0], "archs": [100], "max_version": "13.1"}
    monkeypatch.setattr(space_module, "_read_family", lambda family: data)
    assert "ptxas_opt_level" not in _names(load_space("nvcc", "NVIDIA", "13.0", arch="90"))
    assert "ptxas_opt_level" in _names(load_space("nvcc", "NVIDIA", "13.0", arch="100"))
    assert "ptxas_opt_level" in _names(load_space("nvcc", "NVIDIA", "13.1.80", arch="100"))
    assert "ptxas_opt_level" not in _names(load_space("nvcc", "NVIDIA", "13.2", arch="100"))


@pytest.mark.unit
def test_canonical_flags_redundant_fatal_and_repair():
    assert canonical_flags(["--use_fast_math", "--ftz=true", "--prec-div=false", "--prec-sqrt=false"]) == (
        "--use_fast_math",
    )
    assert canonical_flags(["--ftz=true", "--use_fast_math", "--fmad=false"]) == ("--use_fast_math", "--fmad=false")
    assert canonical_flags(["--Ofast-compile=max", "-Xptxas=-O1"]) == ("--Ofast-compile=max",)
    assert canonical_flags(["-Xptxas=-O2", "--Ofast-compile=min"]) == ("--Ofast-compile=min",)
    repaired = canonical_flags(["--extra-device-vectorization", "--restrict"])
    assert repaired == ("--extra-device-vectorization", "--restrict", "-Xcicc=-kernel-params-are-restrict")
    assert validate_flags("nvcc", list(repaired)) == repaired
    space = load_space("nvcc", "NVIDIA", "13.0", include=("experimental", "restrict"))
    fs = space.flagset_from_flags(list(repaired))
    assert dict(fs.choices).keys() == {"extra_device_vectorization", "restrict"}
    assert set(fs.flags) == set(repaired), (
        "a flag set carries its canonical flags (what reaches nvcc and the cache key)"
    )
    fm = load_space("nvcc", "NVIDIA", "13.0", include=("use_fast_math", "ftz"))
    fast = fm.flagset({"use_fast_math": 1, "ftz": 1})
    assert fast.flags == ("--use_fast_math",) and fast.key == fm.flagset({"use_fast_math": 1}).key
    assert canonical_flags(["--restrict"]) == ("--restrict",)


@pytest.mark.unit
def test_adapt_to_project():
    space = load_space("nvcc", "NVIDIA", "13.0", include=("experimental",))
    fast, notes = adapt_to_project(space, ["-O3", "--use_fast_math"])
    assert not {"use_fast_math", "ftz", "prec_div", "prec_sqrt"} & _names(fast) and "fmad" in _names(fast)
    assert any("use_fast_math" in n for n in notes)
    debug, _ = adapt_to_project(space, ["-G"])
    assert "ptxas_opt_level" not in _names(debug) and "ofast_compile" not in _names(debug)
    dlto, notes = adapt_to_project(space, ["-dlto"])
    assert not any(t.startswith("-Xptxas=") for d in dlto.dimensions for v in d.values for t in v)
    assert "maxrregcount" in _names(dlto) and any("-dlto" in n for n in notes)
    level, _ = adapt_to_project(space, normalize(["nvcc", "-Xptxas", "-O3"]))
    assert "ofast_compile" not in _names(level) and "ptxas_opt_level" in _names(level)
    maxreg, notes = adapt_to_project(space, ["-maxrregcount=64", "-rdc=true"])
    assert (
        "maxrregcount" in _names(maxreg)
        and any("overrides" in n for n in notes)
        and any("relocatable" in n for n in notes)
    )
    same, notes = adapt_to_project(space, ["-O3", "--expt-relaxed-constexpr"])
    assert same == space and notes == []


@pytest.mark.unit
@pytest.mark.parametrize(
    "command",
    [
        ["-use_fast_math"],
        ["--use_fast_math"],
        ["-O3", "-Xptxas", "-O3", "-use_fast_math"],
        ["--ptxas-options=-v", "-use_fast_math", "-x", "cu"],
    ],
)
def test_adaptation_sees_fast_math_in_any_spelling(command):
    space = load_space("nvcc", "NVIDIA", "13.0")
    adapted, notes = adapt_to_project(space, normalize(["nvcc", *command]))
    assert not {"use_fast_math", "ftz", "prec_div", "prec_sqrt"} & _names(adapted)
    assert any("already builds with --use_fast_math" in n for n in notes), notes


@pytest.mark.unit
def test_values_the_project_already_has_are_not_tried():
    space = load_space("nvcc", "NVIDIA", "13.0")
    adapted, notes = adapt_to_project(
        space,
        normalize(["nvcc", "-maxrregcount", "64", "--fmad", "false", "--ptxas-options", "-dlcm=cg,-v", "-restrict"]),
    )
    maxreg = next(d for d in adapted.dimensions if d.name == "maxrregcount")
    assert ("-maxrregcount=64",) not in maxreg.values and ("-maxrregcount=32",) in maxreg.values
    assert "fmad" not in _names(adapted) and "restrict" not in _names(adapted)
    load = next(d for d in adapted.dimensions if d.name == "load_cache")
    assert ("-Xptxas=-dlcm=cg",) not in load.values and len(load.values) > 1
    for text in (
        "fmad: the project already builds with --fmad=false; not tuned",
        "maxrregcount: the project already builds with -maxrregcount=64; that value is not tried",
        "restrict: the project already builds with --restrict; not tuned",
    ):
        assert text in notes, notes


@pytest.mark.cuda
@needs_nvcc
def test_every_catalogue_spelling_reaches_cicc_or_ptxas(tmp_path: Path):
    src = tmp_path / "k.cu"
    src.write_text("__global__ void k(float* p) { p[threadIdx.x] = 1.f; }\n")
    for d in ALL.dimensions:
        for value in d.values[1:]:
            proc = subprocess.run(
                [NVCC, "-dryrun", "-arch=sm_90", "-cubin", "-o", str(tmp_path / "k.cubin"), str(src), *value],
                capture_output=True,
                text=True,
            )
            assert proc.returncode == 0, (value, proc.stderr)
            tools = "\n".join(ln for ln in proc.stderr.splitlines() if re.search(r"cicc|ptxas", ln))
            for tok in value:
                inner = re.sub(r"^-X(ptxas|cicc)=", "", tok)
                if tok.startswith(("-Xptxas=", "-Xcicc=")):
                    for part in inner.split(","):
                        assert part in tools, (tok, part)
                else:
                    assert tools, tok


@pytest.mark.cuda
@needs_nvcc
def test_probe_drops_rejected_and_ignored_values_and_caches(tmp_path: Path):
    dim = Dimension(
        name="x",
        help="",
        values=(
            (),
            ("-Xptxas=-O1",),
            ("-Xptxas=--register-usage-level=11",),
            ("-Xptxas=-bogus",),
            ("-Xcicc=--Xopt,-no-such-llvm-option",),
        ),
    )
    space = FlagSpace(family="nvcc", dimensions=(dim,))
    cache = tmp_path / "probe.json"
    probed, notes = probe_space(space, NVCC, "90", cache)
    assert probed.dimensions[0].values == ((), ("-Xptxas=-O1",))
    assert len(notes) == 3 and all(n.startswith("dropped ") for n in notes)
    assert any("out of valid range" in n for n in notes) and any("Unknown" in n for n in notes)
    assert cache.is_file()
    again, notes2 = probe_space(space, NVCC, "90", cache)
    assert again == probed and notes2 == notes


@pytest.mark.cuda
@needs_nvcc
def test_installed_nvcc_accepts_the_whole_catalogue(tmp_path: Path):
    probed, notes = probe_space(ALL, NVCC, "90", tmp_path / "probe.json")
    assert notes == [], notes
    assert probed.size == ALL.size


def _sass(cubin: Path) -> str:
    cuobjdump = find_tool("cuobjdump")
    nvdisasm = find_tool("nvdisasm")
    if cuobjdump is None or nvdisasm is None:
        pytest.skip("cuobjdump / nvdisasm not installed (pip install nvidia-cuda-cuobjdump nvidia-cuda-nvdisasm)")
    env = {"PATH": f"{nvdisasm.parent}:/usr/bin:/bin"}
    return subprocess.run(
        [str(cuobjdump), "-sass", str(cubin)], capture_output=True, text=True, env=env, check=True
    ).stdout


@pytest.mark.cuda
@needs_nvcc
def test_restrict_survives_extra_device_vectorization(tmp_path: Path):
    src = tmp_path / "k.cu"
    src.write_text(
        "__global__ void k(const float* a, const float* b, float* c, int n) {\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) c[i] = a[i] * b[i]; }\n"
    )

    def loads(flags: tuple[str, ...]) -> set[str]:
        out = tmp_path / "k.cubin"
        subprocess.run([NVCC, "-arch=sm_90", "-cubin", "-o", str(out), str(src), *flags], check=True)
        return set(re.findall(r"\bLDG\.E[.A-Z0-9]*", _sass(out)))

    assert any("CONSTANT" in op for op in loads(("--restrict",)))
    raw = ("--extra-device-vectorization", "--restrict")
    # nvcc 13.0: cicc's -extra-device-vectorization takes the next argument (-kernel-params-are-restrict)
    # as its value, so the raw pair loses --restrict; the canonical flags restate it at the end
    assert any("CONSTANT" in op for op in loads(canonical_flags(raw)))


FAKE_NVCC = """#!/bin/sh
# a stand-in nvcc: its version, and a 'compile' that writes the cubin, counts itself and rejects -bogus
if [ "$1" = "--version" ]; then echo "Cuda compilation tools, release 13.0, V13.0.88"; exit 0; fi
echo compiled >> "$(dirname "$0")/compiles.log"
for a in "$@"; do
  case "$a" in -bogus) echo "nvcc fatal   : Unknown option '-bogus'" >&2; exit 1 ;; esac
done
while [ $# -gt 0 ]; do [ "$1" = "-o" ] && : > "$2"; shift; done
"""


@pytest.mark.unit
def test_the_probes_of_an_nvcc_are_kept_for_every_build_tree_of_the_user(tmp_path: Path, monkeypatch):
    """What a toolkit accepts does not depend on the project: the probes live in the user cache directory
    (flags.probe.default_cache_path takes no build tree), so a tune of a second project or build tree compiles
    no probe again, and two tunes probing at once keep both their outcomes (the store merges under a lock)."""
    from compileiq_cmake.flags.probe import _load_cache, _store_cache, default_cache_path

    nvcc = tmp_path / "toolkit" / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(FAKE_NVCC)
    nvcc.chmod(0o755)
    monkeypatch.setenv("COMPILEIQ_CACHE_DIR", str(tmp_path / "user-cache"))
    path = default_cache_path(str(nvcc))
    assert path.parent == tmp_path / "user-cache" / "probe"
    dim = Dimension(name="opt", help="", values=((), ("-Xptxas=-O1",), ("-bogus",)))
    space = FlagSpace(family="nvcc", dimensions=(dim,))
    probed, notes = probe_space(space, str(nvcc), "90", path)
    log = nvcc.parent / "compiles.log"
    assert len(log.read_text().splitlines()) == 3  # the probe kernel alone, then the two non-empty values
    assert probed.dimensions[0].values == ((), ("-Xptxas=-O1",)) and len(notes) == 1 and "-bogus" in notes[0]
    again, notes2 = probe_space(space, str(nvcc), "90", default_cache_path(str(nvcc)))  # another build tree's tune
    assert (again, notes2) == (probed, notes) and len(log.read_text().splitlines()) == 3
    key = f"{nvcc.resolve()}|13.0.88"
    _store_cache(path, key, str(nvcc), "13.0.88", {"sm_80|-Xptxas=-O2": {"ok": True, "message": ""}})
    assert set(_load_cache(path, key)) == {"sm_90|-Xptxas=-O1", "sm_90|-bogus", "sm_80|-Xptxas=-O2"}
    (tmp_path / "not-a-folder").write_text("")  # a cache directory that cannot be made: nothing kept, same outcomes
    monkeypatch.setenv("COMPILEIQ_CACHE_DIR", str(tmp_path / "not-a-folder" / "cache"))
    third = probe_space(space, str(nvcc), "90", default_cache_path(str(nvcc)))
    assert third == (probed, notes) and len(log.read_text().splitlines()) == 6
