"""nvcc command lines: every spelling of a flag reads the same; the architectures a command builds."""

from __future__ import annotations

import pytest

from compileiq_cmake.project.nvcc_command import architectures, normalize, project_flags, target_architectures


@pytest.mark.unit
@pytest.mark.parametrize(
    "spelling, canonical",
    [
        (["-use_fast_math"], ["--use_fast_math"]),
        (["--use_fast_math"], ["--use_fast_math"]),
        (["-Xptxas", "-O3"], ["-Xptxas=-O3"]),
        (["-Xptxas=-O3,-v"], ["-Xptxas=-O3", "-Xptxas=-v"]),
        (["--ptxas-options=-O3"], ["-Xptxas=-O3"]),
        (["--ptxas-options", "-dlcm=cg"], ["-Xptxas=-dlcm=cg"]),
        (["-maxrregcount", "64"], ["-maxrregcount=64"]),
        (["--maxrregcount=64"], ["-maxrregcount=64"]),
        (["-ftz", "true"], ["--ftz=true"]),
        (["-prec-div=false"], ["--prec-div=false"]),
        (["--relocatable-device-code", "true"], ["-rdc=true"]),
        (["--device-debug"], ["-G"]),
        (["-Ofc", "max"], ["--Ofast-compile=max"]),
    ],
)
def test_every_spelling_reads_the_same(spelling, canonical):
    assert normalize(["nvcc", *spelling]) == canonical


@pytest.mark.unit
def test_outputs_sources_and_dependency_options_are_not_flags():
    cmd = [
        "nvcc",
        "-forward-unknown-to-host-compiler",
        "-O3",
        "-x",
        "cu",
        "-c",
        "/src/k.cpp",
        "-o",
        "k.o",
        "-MD",
        "-MT",
        "k.o",
        "-MF",
        "k.o.d",
        "-Xptxas",
        "-O3",
    ]
    assert normalize(cmd) == ["-forward-unknown-to-host-compiler", "-O3", "-Xptxas=-O3"]
    # an -O3 of the host and an -O3 of ptxas are different flags (repeats of tokens are not collapsed early)
    merged = project_flags(
        [{"command": "nvcc -O3 -c a.cu"}, {"arguments": ["nvcc", "-O3", "-Xptxas", "-O3", "-c", "b.cu"]}]
    )
    assert merged == ["-O3", "-Xptxas=-O3"]


@pytest.mark.unit
@pytest.mark.parametrize(
    "options, archs",
    [
        (["-arch=sm_90"], ("90",)),
        (["-arch", "sm_90"], ("90",)),
        (["--gpu-architecture=sm_90a"], ("90a",)),
        (["--gpu-architecture", "compute_90"], ("90",)),
        (["-gencode", "arch=compute_80,code=sm_80", "-gencode=arch=compute_90,code=[compute_90,sm_90]"], ("80", "90")),
        (["--generate-code=arch=compute_90,code=[sm_90]"], ("90",)),
        (["--generate-code", "arch=compute_100,code=lto_100"], ("100",)),
    ],
)
def test_architectures_in_any_spelling(options, archs):
    found = architectures(["nvcc", "-O3", *options, "-c", "k.cu"])
    assert found.archs == archs and found.options
    assert found.builds(archs[-1]) and not found.builds("75")


@pytest.mark.unit
def test_no_architecture_option_means_nvccs_default():
    found = target_architectures([{"command": "nvcc -O3 -c k.cu"}])
    assert found.archs == () and found.describe() == "nvcc's default architecture"
    assert target_architectures([{"command": "nvcc -arch=all -c k.cu"}]).builds("90")
