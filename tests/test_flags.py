import pytest

from compileiq_cmake.flags import load_space, validate_flags
from compileiq_cmake.model.errors import CompileIQError


@pytest.mark.unit
def test_cuda_space_has_the_documented_dimensions_and_no_debug_flags():
    space = load_space("nvcc", "NVIDIA", "13.0.88")
    names = {d.name for d in space.dimensions}
    assert {
        "ptxas_opt_level",
        "register_usage_level",
        "maxrregcount",
        "use_fast_math",
        "load_cache",
        "restrict",
    } <= names
    tokens = {tok for d in space.dimensions for v in d.values for tok in v}
    assert not any(tok in ("-G", "-g", "--device-debug") or tok.startswith("-lineinfo") for tok in tokens)
    assert all(d.values[0] == () for d in space.dimensions)


@pytest.mark.unit
def test_version_awareness_drops_flags_the_compiler_lacks():
    old = load_space("nvcc", "NVIDIA", "12.0")
    assert "register_usage_level" not in {d.name for d in old.dimensions}
    assert any("register_usage_level" in note for note in old.dropped)


@pytest.mark.unit
def test_exclude_unsafe_numerics_removes_every_fast_math_flag():
    space = load_space("nvcc", "NVIDIA", "13.0", exclude=("unsafe_numerics",))
    assert not any(d.unsafe_numerics for d in space.dimensions)
    gcc = load_space("gcc", "GNU", "12.2", exclude=("fast_math",))
    assert "-ffast-math" not in {t for d in gcc.dimensions for v in d.values for t in v}


@pytest.mark.unit
def test_include_keeps_only_named_dimensions_and_unknown_names_fail():
    space = load_space("gcc", "GNU", "12.2", include=("opt_level", "unroll_loops"))
    assert [d.name for d in space.dimensions] == ["opt_level", "unroll_loops"]
    with pytest.raises(CompileIQError, match="unknown flag dimension 'no_such'"):
        load_space("gcc", "GNU", "12.2", include=("no_such",))


@pytest.mark.unit
def test_gcc_only_flags_are_dropped_for_clang():
    space = load_space("gcc", "Clang", "17.0")
    assert "ipa_pta" not in {d.name for d in space.dimensions}


@pytest.mark.unit
def test_flagset_rendering_and_round_trip():
    space = load_space("gcc", "GNU", "12.2")
    fs = space.flagset({"opt_level": 2, "fast_math": 1})
    assert fs.flags == ("-O3", "-ffast-math")
    assert space.flagset_from_flags(list(fs.flags)) == fs
    assert space.baseline().flags == () and space.baseline().is_baseline


@pytest.mark.unit
@pytest.mark.parametrize(
    "bad", ['")', "${CMAKE_COMMAND}", "-O3 -g", "-O3;-g", "--use_fast_math)\nmessage(x", "-fplugin=evil.so", 3]
)
def test_flag_grammar_refuses_injection_and_unknown_flags(bad):
    with pytest.raises(CompileIQError, match="refusing flag"):
        validate_flags("gcc", [bad])


@pytest.mark.unit
def test_flag_grammar_accepts_catalogue_flags():
    assert validate_flags("nvcc", ["-Xptxas=-O1", "--use_fast_math"]) == ("-Xptxas=-O1", "--use_fast_math")
