"""The energy of one benchmark run: the GPU's total-energy counter (NVML, millijoules since the driver loaded)
read before and after the run, while the run holds its GPU (no other run of the tune or suite is on it).
A run's energy is the whole GPU's for the run's wall time: its kernels, its copies, and the idle power while
the program starts and ends; other processes on the same GPU count too.

Without a GPU (tests, CI), COMPILEIQ_SIMULATE_ENERGY=<file> gives simulated GPUs a counter read from that file
(a number of millijoules the test's benchmark program raises), as COMPILEIQ_SIMULATE_GPUS gives the GPUs."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol, TypeVar

from .gpu import SIMULATE_VARIABLE, GpuSlot

SIMULATE_ENERGY_VARIABLE = "COMPILEIQ_SIMULATE_ENERGY"


class EnergyMeter(Protocol):
    """A counter of the energy a GPU used, in millijoules; None when it cannot be read now. `ticks`: the counter
    advances in steps of its own (NVML's: every 100 ms on the H200, docs/benchmarks/ecosystem.md), so that a
    run's energy is exact only between two of its steps (measure_run aligns to them)."""

    @property
    def ticks(self) -> bool: ...

    def millijoules(self) -> float | None: ...

    def describe(self) -> str: ...

    def for_gpu(self, gpu: GpuSlot) -> EnergyMeter: ...


@dataclass
class NvmlEnergy:
    """NVML's total-energy counter of one GPU (Volta and later), by PCI bus id when known (NVML's indices
    ignore CUDA_VISIBLE_DEVICES), else by index. Only the ids travel (Ray): the handle is taken where it is read."""

    pci_bus_id: str = ""
    ordinal: int = 0
    _handle: object = field(default=None, repr=False, compare=False)
    ticks: bool = field(default=True, init=False)

    def __getstate__(self) -> dict:
        return {"pci_bus_id": self.pci_bus_id, "ordinal": self.ordinal, "_handle": None}

    def _nvml(self):
        import pynvml  # noqa: PLC0415 (optional: nvidia-ml-py)

        if self._handle is None:
            pynvml.nvmlInit()
            if not self.pci_bus_id:
                self._handle = pynvml.nvmlDeviceGetHandleByIndex(self.ordinal)
            else:
                try:
                    self._handle = pynvml.nvmlDeviceGetHandleByPciBusId(self.pci_bus_id)
                except TypeError:  # an nvidia-ml-py that wants bytes
                    self._handle = pynvml.nvmlDeviceGetHandleByPciBusId(self.pci_bus_id.encode())
        return pynvml

    def millijoules(self) -> float | None:
        try:
            return float(self._nvml().nvmlDeviceGetTotalEnergyConsumption(self._handle))
        except Exception:  # the counter went away (driver reload): this run's energy is not known
            return None

    def describe(self) -> str:
        return "NVML's total-energy counter of the GPU"

    def for_gpu(self, gpu: GpuSlot) -> NvmlEnergy:
        return NvmlEnergy(gpu.pci_bus_id, gpu.ordinal)

    def problem(self) -> str:
        """Why this GPU's counter cannot be read ("" when it can)."""
        try:
            nv = self._nvml()
        except ImportError:
            return "NVML is not installed (pip install nvidia-ml-py, part of compileiq-cmake[gpu])"
        except Exception as exc:
            return f"NVML cannot open the GPU ({exc})"
        try:
            nv.nvmlDeviceGetTotalEnergyConsumption(self._handle)
        except Exception as exc:
            return f"this GPU has no total-energy counter NVML can read ({exc})"
        return ""


@dataclass(frozen=True)
class SimulatedEnergy:
    """A simulated GPU's counter: the number in a file (tests without a GPU)."""

    path: Path
    ticks: bool = field(default=False, init=False)

    def millijoules(self) -> float | None:
        try:
            return float(self.path.read_text().strip() or 0)
        except (OSError, ValueError):
            return None

    def describe(self) -> str:
        return f"the simulated energy counter {self.path}"

    def for_gpu(self, gpu: GpuSlot) -> SimulatedEnergy:
        return self  # one counter for the simulated GPUs


def energy_meter(
    gpu: GpuSlot | None, language: str, environ: dict[str, str] | None = None
) -> tuple[EnergyMeter | None, str]:
    """The energy counter of the GPU a tune's runs use, or None and why not (one clause)."""
    env = os.environ if environ is None else environ
    simulated = env.get(SIMULATE_ENERGY_VARIABLE, "")
    if simulated and env.get(SIMULATE_VARIABLE):
        return SimulatedEnergy(Path(simulated)), ""
    if language != "CUDA":
        return None, (
            f"a {language} target's runs use the CPU, whose energy is not measured (the GPU's counter "
            "is what --objective energy reads)"
        )
    if gpu is not None and not gpu.pci_bus_id and env.get(SIMULATE_VARIABLE):
        return None, "the GPUs are simulated (COMPILEIQ_SIMULATE_GPUS) and have no energy counter"
    meter = NvmlEnergy(gpu.pci_bus_id if gpu is not None else "", gpu.ordinal if gpu is not None else 0)
    problem = meter.problem()
    return (None, problem) if problem else (meter, "")


T = TypeVar("T")
TICK_WAIT = 0.5  # seconds at most to wait for the counter's next step (NVML's come every 0.1 s)


def _next_tick(
    meter: EnergyMeter, clock: Callable[[], float], sleep: Callable[[float], None]
) -> tuple[float, float] | None:
    """The counter's value and the time at its next step (at most TICK_WAIT s of polling: a counter that does
    not step is taken as read); None when it cannot be read."""
    first, start = meter.millijoules(), clock()
    while first is not None and clock() - start < TICK_WAIT:
        sleep(0.001)
        value = meter.millijoules()
        if value != first:
            return (value, clock()) if value is not None else None
    return (first, clock()) if first is not None else None


def measure_run(
    meter: EnergyMeter | None,
    run: Callable[[], T],
    aligned: bool,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], None] = time.sleep,
) -> tuple[T, float | None, float]:
    """run() with the GPU's energy over it: (its result, joules or None, seconds spent waiting for the counter).
    Aligned (--objective energy, a counter that steps): the run starts at a step of the counter and its energy
    runs to the first step after it ends, less the power of the step after that times the time between the
    run's end and that first step (the GPU idling after the run); else the counter is read before and after
    (cheap, within one step's energy: the co-objective of a time tune, a median over many runs)."""
    if meter is None:
        return run(), None, 0.0
    if not (aligned and meter.ticks):
        before = meter.millijoules()
        result = run()
        return result, joules_between(before, meter.millijoules()), 0.0
    waited = clock()
    start = _next_tick(meter, clock, sleep)
    waited = clock() - waited
    result = run()
    ended = clock()
    end = _next_tick(meter, clock, sleep)
    after = _next_tick(meter, clock, sleep) if end is not None else None
    waited += clock() - ended
    if start is None or end is None or after is None or after[1] <= end[1]:
        return result, None, waited
    tail = (after[0] - end[0]) / (after[1] - end[1]) * max(0.0, end[1] - ended)  # mJ of the idle tail
    return result, joules_between(start[0], end[0] - tail), waited


def joules_between(before: float | None, after: float | None) -> float | None:
    """The energy between two readings of a counter, in joules; None when either is missing or the counter
    went back (reset)."""
    if before is None or after is None or after < before:
        return None
    return (after - before) / 1000.0
