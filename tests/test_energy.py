"""Issue 39: energy per run (the GPU's counter, read around each run while it holds its GPU) as a reported
co-objective and as the objective (--objective energy, refused where it cannot be read); the device code's
size per trial. Without a GPU the counter is simulated: COMPILEIQ_SIMULATE_ENERGY names a file the test
program adds its "energy" to, as COMPILEIQ_SIMULATE_GPUS simulates the GPUs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import HAVE_NVCC, PROJECTS, configure, one_line_error

ENERGY_SIM = PROJECTS / "energy_sim"
TUNE = (
    "--target",
    "energy_sim",
    "--bench",
    "energy_sim",
    "--metric",
    "time_ms=([0-9.]+)",
    "--pass-regex",
    "PASS",
    "--include-flags",
    "fast_math",
    "--include-flags",
    "no_math_errno",
    "--budget",
    "4",
    "--min-gain",
    "0.05",
)


def _cli(*args: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "compileiq_cmake", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **env},
    )


@pytest.mark.unit
def test_joules_between_two_readings_and_the_simulated_counter(tmp_path):
    from compileiq_cmake.measure.energy import SimulatedEnergy, energy_meter, joules_between
    from compileiq_cmake.measure.gpu import GpuSlot

    assert joules_between(1000.0, 3500.0) == 2.5
    assert joules_between(None, 3.0) is None and joules_between(5.0, None) is None
    assert joules_between(5000.0, 10.0) is None  # the counter went back (driver reload): not a negative energy
    counter = tmp_path / "counter"
    counter.write_text("1234.5\n")
    env = {"COMPILEIQ_SIMULATE_GPUS": "1", "COMPILEIQ_SIMULATE_ENERGY": str(counter)}
    meter, why = energy_meter(GpuSlot(0, "0", "simulated GPU"), "CXX", env)
    assert isinstance(meter, SimulatedEnergy) and why == "" and meter.millijoules() == 1234.5
    meter, why = energy_meter(None, "CXX", {})
    assert meter is None and "CXX target's runs use the CPU" in why
    meter, why = energy_meter(GpuSlot(0, "0", "simulated GPU"), "CUDA", {"COMPILEIQ_SIMULATE_GPUS": "1"})
    assert meter is None and "simulated" in why


@pytest.mark.unit
def test_a_runner_reads_the_counter_around_each_run_and_keeps_joules_beside_the_metric(tmp_path):
    """The runner's runs (a real process) with a simulated counter the program raises by 2.5 J a run: each
    measured run's joules are kept; with --objective energy the samples are the joules and the metric is kept
    beside them."""
    from dataclasses import replace

    from compileiq_cmake.measure.energy import SimulatedEnergy
    from compileiq_cmake.measure.runner import BenchCommand, Runner
    from compileiq_cmake.model.spec import MetricSpec, TuneSpec
    from compileiq_cmake.project.cmake_project import VariantTree

    counter = tmp_path / "counter"
    counter.write_text("0")
    script = tmp_path / "bench.sh"
    script.write_text(f'#!/bin/sh\nv=$(cat {counter})\necho $((v + 2500)) > {counter}\necho "time_ms=4.0"\n')
    script.chmod(0o755)
    spec = TuneSpec(
        tmp_path, tmp_path, "t", (str(script),), MetricSpec.parse("time_ms=([0-9.]+)", True), tmp_path / "o.toml"
    )
    tree = VariantTree(tmp_path, "worker-0", "cmake")
    tree.path.mkdir(parents=True)
    runner = Runner(spec, BenchCommand((str(script),), (), tmp_path / "build"), meter=SimulatedEnergy(counter))
    (m,) = runner.measure(tree, repeats=3, warmup=1).measurements
    assert m.samples == (4.0, 4.0, 4.0) and m.joules == (2.5, 2.5, 2.5) and m.metric == ()
    energy = replace(runner, spec=replace(spec, objective="energy"))
    (m,) = energy.measure(tree, repeats=2, warmup=0).measurements
    assert m.samples == (2.5, 2.5) and m.metric == (4.0, 4.0) and m.metric_median == 4.0
    assert (
        spec.lower_is_better
        and replace(spec, objective="energy", metric=MetricSpec.parse("x=([0-9]+)", False)).lower_is_better
    )
    broken = replace(energy, meter=SimulatedEnergy(tmp_path / "missing"))
    result = broken.measure(tree, repeats=1, warmup=0)
    assert result.status.value == "metric_missing" and "energy counter could not be read" in result.reason


@pytest.mark.cmake
@pytest.mark.slow
def test_time_and_energy_objectives_choose_different_winners(tmp_path):
    """The same project tuned twice on a simulated GPU with a simulated counter: for time -ffast-math wins
    (6 ms, 1.5 J), for energy -fno-math-errno (9 ms, 0.7 J); every valid trial carries its energy per run in
    the summary and the report's trade-offs; the energy entry records its objective and joules, and
    `check --remeasure` re-measures it in joules."""
    from compileiq_cmake.results.toml_io import read_entries

    src = tmp_path / "energy_sim"
    shutil.copytree(ENERGY_SIM, src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    counter = tmp_path / "counter"
    counter.write_text("0\n")
    env = {
        "COMPILEIQ_SIMULATE_GPUS": "1",
        "COMPILEIQ_SIMULATE_ENERGY": str(counter),
        "COMPILEIQ_CACHE_DIR": str(tmp_path / "cache"),
        "COMPILEIQ_NO_LEARN": "",
    }
    timed = _cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        *TUNE,
        "--no-prior",
        "--output",
        str(tmp_path / "time.toml"),
        "--json-summary",
        str(tmp_path / "time.json"),
        env=env,
        cwd=tmp_path,
    )
    assert timed.returncode == 0, (timed.stdout + timed.stderr)[-3000:]
    (entry,) = read_entries(tmp_path / "time.toml")
    assert "-ffast-math" in entry.flags and entry.objective == "time", entry
    doc = json.loads((tmp_path / "time.json").read_text())
    valid = [t for t in doc["trials"] if t["status"] == "ok"]
    assert doc["objective"] == "time" and len(valid) >= 3
    by_flags = {tuple(t["flags"]): t for t in valid}
    assert 0.9 < by_flags[()]["energy_joules"] < 1.1, by_flags[()]
    assert 1.35 < by_flags[("-ffast-math",)]["energy_joules"] < 1.65
    learned = sorted((tmp_path / "cache").glob("prior/**/*.json"))  # what the time tune added to the prior data
    energy = _cli(
        "tune",
        "-S",
        str(src),
        "-B",
        str(build),
        *TUNE,
        "--objective",
        "energy",
        "--output",
        str(src / "compileiq.toml"),
        "--json-summary",
        str(tmp_path / "energy.json"),
        env=env,
        cwd=tmp_path,
    )
    out = energy.stdout + energy.stderr
    assert energy.returncode == 0, out[-3000:]
    assert "joules per run" in out, out[-3000:]
    # the prior predicts time: an energy tune orders its search by it but adds nothing to the local prior data
    assert "it measured energy, and the prior predicts time" in out, out[-3000:]
    assert sorted((tmp_path / "cache").glob("prior/**/*.json")) == learned  # the time tune's only
    (entry,) = read_entries(src / "compileiq.toml")
    assert entry.flags == ("-fno-math-errno",) and entry.objective == "energy", entry
    assert 0.9 < entry.baseline[0] < 1.1 and 0.6 < entry.tuned[0] < 0.8 and 1.3 < entry.speedup < 1.55, entry
    shown = _cli("show", str(src / "compileiq.toml"), env=env, cwd=tmp_path).stdout
    assert "energy gain:" in shown and "joules per run" in shown and " J\n" in shown, shown
    doc = json.loads((tmp_path / "energy.json").read_text())
    trial = next(t for t in doc["trials"] if t["flags"] == ["-fno-math-errno"])
    assert 8.5 < trial["metric_cost"] < 9.5 and 0.6 < trial["energy_joules"] < 0.8, trial
    report = (build / "compileiq" / "report.html").read_text()
    assert 'id="plot-tradeoffs"' in report and "energy gain (search)" in report
    check = _cli(
        "check",
        "-S",
        str(src),
        "-B",
        str(build),
        "--remeasure",
        "--bench",
        "energy_sim",
        "--rounds",
        "6",
        "--json",
        env=env,
        cwd=tmp_path,
    )
    assert check.returncode == 0, (check.stdout + check.stderr)[-3000:]
    measured = json.loads(check.stdout)["entries"][0]["remeasure"]
    assert measured["objective"] == "energy" and measured["passed"] and 1.3 < measured["speedup"] < 1.55, measured
    plain = _cli(
        "check",
        "-S",
        str(src),
        "-B",
        str(build),
        "--remeasure",
        "--bench",
        "energy_sim",
        env={"COMPILEIQ_SIMULATE_GPUS": "1", "COMPILEIQ_SIMULATE_ENERGY": ""},
        cwd=tmp_path,
    )
    assert plain.returncode != 0 and "tuned for energy per run" in plain.stderr, plain.stderr[-2000:]


@pytest.mark.cmake
def test_objective_energy_is_refused_where_no_counter_can_be_read(tmp_path):
    """A host target's runs use the CPU: --objective energy is refused in one line before anything is built;
    a replay has no energy either."""
    src = tmp_path / "energy_sim"
    shutil.copytree(ENERGY_SIM, src)
    build = tmp_path / "build"
    assert configure(src, build, "-DCMAKE_BUILD_TYPE=Release").returncode == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("COMPILEIQ_SIMULATE")}
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            "tune",
            "-S",
            str(src),
            "-B",
            str(build),
            *TUNE,
            "--objective",
            "energy",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    one_line_error(
        proc.returncode,
        proc.stdout,
        proc.stderr,
        "--objective energy cannot be measured here",
        "CXX target's runs use the CPU",
        "--objective time",
    )
    assert not (src / "compileiq.toml").exists() and not list(
        (build / "compileiq").glob("worker-*/CMakeFiles/energy_sim.dir/*.o")
    )
    bad = subprocess.run(
        [
            sys.executable,
            "-m",
            "compileiq_cmake",
            "tune",
            "-S",
            str(src),
            "-B",
            str(build),
            *TUNE,
            "--objective",
            "power",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert bad.returncode == 2 and "--objective" in bad.stderr and "power" in bad.stderr


@pytest.mark.cuda
@pytest.mark.skipif(not HAVE_NVCC, reason="needs nvcc")
def test_device_code_bytes_are_the_fatbinary_sections_of_executables_objects_and_archives(tmp_path):
    """nvcc's outputs (no GPU needed): an executable's .nv_fatbin, a relocatable object's __nv_relfatbin, a
    static library's members; code for two architectures is more device code than for one; a host program has none."""
    from compileiq_cmake.execute.device_size import device_code_bytes

    cu = tmp_path / "k.cu"
    cu.write_text(
        "__global__ void k(float* x, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i < n) x[i] = x[i] * 2.0f + 1.0f; }\n"
        "int main() { k<<<1, 32>>>(nullptr, 0); return 0; }\n"
    )

    def nvcc(*args: str) -> None:
        proc = subprocess.run(["nvcc", "-arch=sm_90", *args], cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr

    nvcc("-o", "plain", "k.cu")
    nvcc(
        "-gencode",
        "arch=compute_80,code=sm_80",
        "-gencode",
        "arch=compute_90,code=[sm_90,compute_90]",
        "-o",
        "two",
        "k.cu",
    )
    nvcc("-rdc=true", "-c", "-o", "k.o", "k.cu")
    subprocess.run(["ar", "rcs", "libk.a", "k.o"], cwd=tmp_path, check=True)
    (tmp_path / "h.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-o", "host", "h.c"], cwd=tmp_path, check=True)
    plain, two = device_code_bytes([tmp_path / "plain"]), device_code_bytes([tmp_path / "two"])
    obj, lib = device_code_bytes([tmp_path / "k.o"]), device_code_bytes([tmp_path / "libk.a"])
    assert 0 < plain < two and obj > 0 and lib == obj, (plain, two, obj, lib)
    assert device_code_bytes([tmp_path / "host", tmp_path / "k.cu", tmp_path / "nothing"]) == 0
    assert device_code_bytes([tmp_path / "plain", tmp_path / "libk.a"]) == plain + obj
    # linked with relocatable device code, an executable keeps each object's __nv_relfatbin beside its linked
    # .nv_fatbin: only the code it loads counts
    (tmp_path / "main.cu").write_text(
        "__global__ void k(float*, int);\nint main() { k<<<1, 32>>>(nullptr, 0); return 0; }\n"
    )
    (tmp_path / "k2.cu").write_text(cu.read_text().replace("int main() { k<<<1, 32>>>(nullptr, 0); return 0; }\n", ""))
    nvcc("-rdc=true", "-o", "rdc", "main.cu", "k2.cu")
    sections = subprocess.run(["readelf", "-S", "-W", str(tmp_path / "rdc")], capture_output=True, text=True).stdout
    sizes = {}
    for line in sections.splitlines():  # "  [17] .nv_fatbin  PROGBITS  <address> <offset> <size> ..."
        fields = line.split("]", 1)[1].split() if line.strip().startswith("[") and "]" in line else []
        if len(fields) > 4 and "fatbin" in fields[0]:
            sizes[fields[0]] = int(fields[4], 16)
    assert sizes.get("__nv_relfatbin", 0) > 0, sections
    assert device_code_bytes([tmp_path / "rdc"]) == sizes[".nv_fatbin"], (sizes, device_code_bytes([tmp_path / "rdc"]))


class _TickingGpu:
    """A GPU whose energy counter steps every 0.1 s (as NVML's on the H200) on a fake clock: 80 W idle, 500 W
    while a run is under way."""

    ticks = True

    def __init__(self, phase: float) -> None:
        self.t, self.busy_until, self.energy_at = phase, -1.0, [(0.0, 0.0)]

    def _energy(self, t: float) -> float:  # mJ used from 0 to t
        idle, busy = 80.0, 500.0
        busy_from = self.busy_until - 0.43
        spent_busy = max(0.0, min(t, self.busy_until) - busy_from) if self.busy_until > 0 else 0.0
        return (t - spent_busy) * idle * 1000 + spent_busy * busy * 1000

    def millijoules(self) -> float:
        return self._energy(int(self.t / 0.1 + 1e-9) * 0.1)

    def clock(self) -> float:
        return self.t

    def sleep(self, dt: float) -> None:
        self.t += dt

    def run(self) -> str:
        self.busy_until = self.t + 0.43
        self.t = self.busy_until
        return "ran"


@pytest.mark.unit
@pytest.mark.parametrize("phase", [0.0, 0.031, 0.077, 0.0999])
def test_an_aligned_energy_reading_is_the_runs_own_energy_whatever_the_counters_phase(phase):
    """NVML's counter steps every 100 ms: read before and after, a 0.43 s run at 500 W (215 J) reads 215 J
    +- one step (up to 50 J here); aligned to the steps, with the idle tail after the run taken out, it reads
    215 J within 0.5 J, whatever the phase of the counter when the run starts."""
    from compileiq_cmake.measure.energy import measure_run

    gpu = _TickingGpu(phase)
    result, joules, waited = measure_run(gpu, gpu.run, aligned=True, clock=gpu.clock, sleep=gpu.sleep)
    assert result == "ran" and abs(joules - 215.0) < 0.5, joules
    assert 0.0 < waited <= 0.31
    gpu = _TickingGpu(phase + 1.0)
    _, rough, waited = measure_run(gpu, gpu.run, aligned=False, clock=gpu.clock, sleep=gpu.sleep)
    assert waited == 0.0 and abs(rough - 215.0) <= 50.0 + 1e-6
