import tomllib
from dataclasses import replace

import pytest
import tomli_w

from compileiq_cmake.model.errors import CompileIQError
from compileiq_cmake.results.cmake_entries import cmake_entries
from compileiq_cmake.results.schema import FlagsEntry
from compileiq_cmake.results.toml_io import read_entries, write_entry


def make_entry(**kw) -> FlagsEntry:
    base = dict(
        target="nbody",
        language="CUDA",
        arch="90",
        compiler_id="NVIDIA",
        compiler_version="13.0.88",
        flags=("--use_fast_math", "-Xptxas=-O1"),
        build_type="Release",
        device="NVIDIA H200 (132 SMs)",
        compute_capability="9.0",
        metric="time_ms=([0-9.]+)",
        lower_is_better=True,
        workloads=("--n 16384", "--n 32768"),
        baseline=(2.0, 8.0),
        tuned=(1.5, 6.0),
        speedup=1.3333,
        trials=30,
        date="2026-11-29T18:00:00+00:00",
        tool_version="0.1.0",
        sources_sha256="ab" * 32,
    )
    base.update(kw)
    return FlagsEntry(**base)


@pytest.mark.unit
def test_round_trip_and_merge(tmp_path):
    path = tmp_path / "compileiq.toml"
    first = make_entry()
    write_entry(path, first)
    assert read_entries(path) == [first]
    host = make_entry(
        target="host_kernels",
        language="CXX",
        arch="",
        compiler_id="GNU",
        compiler_version="12.2.0",
        flags=("-O3", "-march=native"),
        compute_capability="",
    )
    write_entry(path, host)
    newer = replace(first, flags=("--restrict",), speedup=1.05)
    write_entry(path, newer)
    assert read_entries(path) == [host, newer]
    assert not list(tmp_path.glob(".compileiq-*")), "temporary files left behind"


@pytest.mark.unit
def test_control_characters_survive(tmp_path):
    path = tmp_path / "c.toml"
    entry = make_entry(device='GPU \x1b[1m"quoted"\ttab', metric="t=([0-9]+)\\s")
    write_entry(path, entry)
    assert read_entries(path)[0].device == entry.device
    assert tomllib.loads(path.read_text())["entry"][0]["metric"] == "t=([0-9]+)\\s"


@pytest.mark.unit
@pytest.mark.parametrize(
    "field,value,message",
    [
        ("flags", ['--use_fast_math")\nexecute_process(COMMAND rm -rf /)\n#'], "refusing flag"),
        ("flags", ["${EVIL}"], "refusing flag"),
        ("flags", ["-Xptxas=-O9"], "not a known nvcc flag"),
        ("target", 'nbody")', "refusing target"),
        ("arch", "90;sm_70", "refusing arch"),
        ("build_type", "Release>,$<1:-evil", "refusing build_type"),
    ],
)
def test_hostile_toml_is_refused(tmp_path, field, value, message):
    path = tmp_path / "compileiq.toml"
    write_entry(path, make_entry())
    text = path.read_text()
    import tomli_w

    data = tomllib.loads(text)
    data["entry"][0][field] = value
    path.write_text(tomli_w.dumps(data))
    with pytest.raises(CompileIQError, match=message):
        read_entries(path)


@pytest.mark.unit
def test_malformed_toml_is_one_clear_error(tmp_path):
    path = tmp_path / "compileiq.toml"
    path.write_text("schema_version = 1\n[[entry]\ntarget = 'x'\n")
    with pytest.raises(CompileIQError, match="is not valid TOML"):
        read_entries(path)
    path.write_text("schema_version = 7\n")
    with pytest.raises(CompileIQError, match="schema_version"):
        read_entries(path)


@pytest.mark.unit
def test_cmake_entries_quote_everything_and_skip_replays():
    text = cmake_entries([make_entry(), make_entry(target="other", replay=True)])
    assert (
        '_compileiq_entry(TARGET "nbody" LANGUAGE CUDA ARCH "90" COMPILER_ID NVIDIA COMPILER_VERSION 13.0 '
        'COMPILER_VERSION_FULL "13.0.88" SOURCES_SHA256 "' + "ab" * 32 + '" DATE "2026-11-29T18:00:00+00:00" '
        'CONFIG "Release" FLAGS "--use_fast_math" "-Xptxas=-O1")'
    ) in text
    assert '_compileiq_entry(TARGET "other"' not in text and "replay" in text


@pytest.mark.unit
def test_apply_controls_file_is_copied_beside_the_toml_with_its_sha256_and_checked_at_configure(tmp_path):
    """The winner's ACF is copied beside the TOML as compileiq/acf/<sha256>.acf with NVIDIA's notice, recorded
    relative with its sha256 and ptxas version; the configure resolves it, and a changed or missing file is left
    out (with why) while the rest of the entry applies (issue 50)."""
    import hashlib

    from compileiq_cmake.tune.entry import _portable_acf

    acf = tmp_path / "state" / "fast.acf"
    acf.parent.mkdir()
    acf.write_bytes(b"controls v1\n")
    digest = hashlib.sha256(b"controls v1\n").hexdigest()
    flags, digests = _portable_acf(("--use_fast_math", f"-Xptxas=--apply-controls={acf}"), tmp_path)
    rel = f"compileiq/acf/{digest}.acf"
    assert flags == ("--use_fast_math", f"-Xptxas=--apply-controls={rel}") and digests == ((rel, digest),)
    assert (tmp_path / rel).read_bytes() == b"controls v1\n"
    assert "© NVIDIA Corporation, 2026." in (tmp_path / "compileiq" / "acf" / "NOTICE").read_text()
    toml = tmp_path / "compileiq.toml"
    write_entry(toml, make_entry(flags=flags, acf_sha256=digests, acf_ptxas="13.0.88"))
    (entry,) = read_entries(toml)
    assert entry.acf_ptxas == "13.0.88"
    text = cmake_entries([entry], tmp_path)
    copy = (tmp_path / rel).resolve()
    assert f'"-Xptxas=--apply-controls={copy}"' in text and f'ACF_FILES "{copy}"' in text
    assert 'ACF_PTXAS "13.0.88"' in text and "ACF_PROBLEM" not in text
    (tmp_path / rel).write_bytes(b"controls v2: edited after the tune\n")
    text = cmake_entries([entry], tmp_path)
    assert "_compileiq_entry(" in text and "apply-controls" not in text.split("ACF_PROBLEM")[0]
    assert "changed since the tune" in text and '"--use_fast_math"' in text
    (tmp_path / rel).unlink()
    assert "does not exist" in cmake_entries([entry], tmp_path)
    bad = toml.read_text().replace(digest, "0" * 64, 1)
    toml.write_text(bad)
    from compileiq_cmake.model.errors import CompileIQError

    with pytest.raises(CompileIQError, match="acf_sha256"):
        read_entries(toml)


@pytest.mark.unit
def test_per_source_part_round_trips_and_bad_parts_are_refused(tmp_path):
    from compileiq_cmake.model.errors import CompileIQError
    from compileiq_cmake.results.toml_io import read_entries, write_entry

    toml = tmp_path / "compileiq.toml"
    parts = ({"path": "src/kernels/a.cu", "flags": ["-maxrregcount=64"]},)
    write_entry(toml, make_entry(sources=parts))
    (e,) = read_entries(toml)
    assert e.sources == parts
    for bad, message in (
        ({"path": "../x.cu", "flags": ["-maxrregcount=64"]}, "without '..'"),
        ({"path": "/abs/x.cu", "flags": ["-maxrregcount=64"]}, "relative to the source directory"),
        ({"path": "a b.cu", "flags": ["-maxrregcount=64"]}, "refusing source path"),
        ({"path": "a.cu", "flags": []}, "non-empty list"),
        ({"path": "a.cu", "flags": ["-maxrregcount=64"], "why": 1}, "sources\\[0\\] has unknown key 'why'"),
        ({"path": "a.cu", "flags": ["--no-such-flag"]}, "source 'a.cu'"),
    ):
        text = toml.read_text()
        doc = tomllib.loads(text)
        doc["entry"][0]["sources"] = [bad]
        bad_file = tmp_path / "bad.toml"
        bad_file.write_text(tomli_w.dumps(doc))
        with pytest.raises(CompileIQError, match=message) as err:
            read_entries(bad_file)
        assert str(bad_file) in str(err.value)
    doc = tomllib.loads(toml.read_text())
    doc["entry"][0]["sources"] = [parts[0], parts[0]]
    (tmp_path / "dup.toml").write_text(tomli_w.dumps(doc))
    with pytest.raises(CompileIQError, match="two per-source parts"):
        read_entries(tmp_path / "dup.toml")


@pytest.mark.unit
def test_device_lto_is_a_boolean_of_cuda_entries(tmp_path):
    toml = tmp_path / "compileiq.toml"
    write_entry(toml, make_entry(device_lto=True))
    (e,) = read_entries(toml)
    assert e.device_lto is True and "DEVICE_LTO" in cmake_entries([e])
    for language, value, message in (("CXX", True, "true only for a CUDA entry"), ("CUDA", "yes", "true or false")):
        doc = tomllib.loads(toml.read_text())
        doc["entry"][0].update(language=language, device_lto=value)
        if language == "CXX":
            doc["entry"][0].update(compiler_id="GNU", compiler_version="12.2.0", arch="", flags=["-funroll-loops"])
        bad = tmp_path / "bad.toml"
        bad.write_text(tomli_w.dumps(doc))
        with pytest.raises(CompileIQError, match=message):
            read_entries(bad)
