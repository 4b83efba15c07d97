"""The GPU being tuned on, through pycuda (an optional extra, imported lazily)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..model.errors import CompileIQError


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"{major}{minor}"


_CUDA_ERROR_NO_DEVICE = 100


def no_gpu_reason() -> str:
    """Why this machine cannot run CUDA code ("" when the NVIDIA driver sees a GPU), asked of the driver
    itself (libcuda through ctypes), so that the answer does not depend on pycuda being installed."""
    import ctypes  # noqa: PLC0415

    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return "this machine has no GPU driver (libcuda.so.1, the NVIDIA driver's library, cannot be loaded)"
    rc = driver.cuInit(0)
    if rc == _CUDA_ERROR_NO_DEVICE:
        return "the NVIDIA driver finds no GPU on this machine"
    if rc != 0:
        return f"the NVIDIA driver cannot be initialized (cuInit error {rc})"
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return "the NVIDIA driver finds no GPU on this machine"
    return ""


def require_gpu() -> None:
    """CompileIQError (one line: there is no GPU, and why) unless this machine can run CUDA code."""
    reason = no_gpu_reason()
    if reason:
        raise CompileIQError(
            f"no GPU: {reason}; a CUDA target's benchmarks run on a GPU of this machine (tune on "
            "a machine with an NVIDIA GPU, or with --executor ray on a cluster with GPUs)"
        )


def detect_gpu(ordinal: int = 0) -> GpuInfo:
    require_gpu()  # before pycuda: without a GPU, "install pycuda" would be the wrong advice
    try:
        import pycuda.driver as cuda  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise CompileIQError("benchmarking a CUDA target needs pycuda: pip install 'compileiq-cmake[gpu]'") from None
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            raise CompileIQError("no CUDA GPU found; CUDA targets can only be tuned on a machine with a GPU")
        dev = cuda.Device(ordinal)
        sms = dev.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
        return GpuInfo(name=dev.name(), compute_capability=dev.compute_capability(), sm_count=int(sms))
    except cuda.Error as exc:
        raise CompileIQError(
            f"no usable CUDA GPU ({exc}); CUDA targets can only be tuned on a machine with a GPU"
        ) from None


_SLOWDOWN_REASONS = {  # NVML clock event (throttle) reason bits that mean the GPU was slowed down
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x20: "sw_thermal",
    0x40: "hw_thermal",
    0x80: "hw_power_brake",
}


@dataclass(frozen=True)
class GpuState:
    sm_clock_mhz: int
    temperature_c: int
    slowdowns: tuple[str, ...]

    @property
    def throttled(self) -> bool:
        return bool(self.slowdowns)

    def describe(self) -> str:
        slow = f", slowed down: {', '.join(self.slowdowns)}" if self.slowdowns else ""
        return f"SM {self.sm_clock_mhz} MHz, {self.temperature_c} C{slow}"


class GpuMonitor:
    """Clocks, temperature and slowdown reasons through NVML (nvidia-ml-py), when present; else inert."""

    def __init__(self, ordinal: int = 0, pci_bus_id: str = "") -> None:
        """The GPU by its PCI bus id when known (NVML's indices ignore CUDA_VISIBLE_DEVICES), else by index."""
        self._nvml = None
        self._handle = None
        try:
            import pynvml  # noqa: PLC0415 (optional)

            pynvml.nvmlInit()
            self._handle = (
                pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
                if pci_bus_id
                else pynvml.nvmlDeviceGetHandleByIndex(ordinal)
            )
            self._nvml = pynvml
        except Exception:  # no NVML library, no driver, no GPU: nothing to monitor
            self._nvml = None

    @property
    def available(self) -> bool:
        return self._nvml is not None

    def sample(self) -> GpuState | None:
        if self._nvml is None:
            return None
        nv = self._nvml
        try:
            clock = nv.nvmlDeviceGetClockInfo(self._handle, nv.NVML_CLOCK_SM)
            temp = nv.nvmlDeviceGetTemperature(self._handle, nv.NVML_TEMPERATURE_GPU)
            reasons_fn = (
                getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
                or nv.nvmlDeviceGetCurrentClocksThrottleReasons
            )
            bits = int(reasons_fn(self._handle))
        except Exception:
            return None
        return GpuState(int(clock), int(temp), tuple(name for bit, name in _SLOWDOWN_REASONS.items() if bits & bit))


def host_cpu() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


SIMULATE_VARIABLE = "COMPILEIQ_SIMULATE_GPUS"  # tests and CI: N simulated GPUs (no device behind them)
MAX_SIMULATED = 64  # as many GPUs as one host of the largest kinds holds, with room


@dataclass(frozen=True)
class GpuSlot:
    """One GPU a tune may run benchmarks on: one run at a time."""

    ordinal: int  # position among the GPUs this process sees
    device: str  # what CUDA_VISIBLE_DEVICES gets for a run on it (the parent's entry for it, else the index)
    name: str
    pci_bus_id: str = ""  # NVML state is read for this GPU ("" when simulated or unknown)

    def describe(self) -> str:
        return f"GPU {self.device} ({self.name})"


@dataclass(frozen=True)
class Placement:
    """Where a tune's benchmarks run when this process does not choose (a Ray cluster's GPUs): the GPUs
    (labels), their architecture and a description of them; given to tune_setup.setup() instead of the
    local GPUs."""

    gpus: tuple[GpuSlot, ...]
    arch: str
    device: str


def _nvml_gpus() -> list[tuple[str, str, str, str]]:
    """(index, uuid, name, pci bus id) of every GPU NVML sees, in NVML order; [] without NVML."""
    try:
        import pynvml  # noqa: PLC0415 (optional)

        pynvml.nvmlInit()
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            name = pynvml.nvmlDeviceGetName(h)
            uuid = pynvml.nvmlDeviceGetUUID(h)
            bus = pynvml.nvmlDeviceGetPciInfo(h).busId
            out.append(
                (
                    str(i),
                    uuid if isinstance(uuid, str) else uuid.decode(),
                    name if isinstance(name, str) else name.decode(),
                    bus if isinstance(bus, str) else bus.decode(),
                )
            )
        return out
    except Exception:
        return []


def visible_gpus(selection: str | None = None, environ: dict[str, str] | None = None) -> tuple[GpuSlot, ...]:
    """The GPUs a tune uses. `selection`: None or "all" (every visible GPU of the same model as the first) or
    "0,2" (visible ordinals). CUDA_VISIBLE_DEVICES is honoured: ordinals count the GPUs it names, and a run
    gets that GPU's own entry. COMPILEIQ_SIMULATE_GPUS=N gives N simulated GPUs (tests without a GPU)."""
    env = dict(os.environ if environ is None else environ)
    simulated = env.get(SIMULATE_VARIABLE, "")
    if simulated:
        if not simulated.isdigit() or not 1 <= int(simulated) <= MAX_SIMULATED:
            raise CompileIQError(f"{SIMULATE_VARIABLE}={simulated!r} must be a whole number from 1 to {MAX_SIMULATED}")
        slots = [GpuSlot(i, str(i), "simulated GPU") for i in range(int(simulated))]
    else:
        found = _nvml_gpus()
        visible = env.get("CUDA_VISIBLE_DEVICES")
        if visible is not None:
            wanted = [v.strip() for v in visible.split(",") if v.strip()]
            chosen = []
            for entry in wanted:
                match = next(
                    (
                        g
                        for g in found
                        if entry in (g[0], g[1]) or (entry.startswith("GPU-") and g[1].startswith(entry))
                    ),
                    None,
                )
                if match is None:
                    break  # CUDA stops at the first invalid entry too
                chosen.append((entry, match))
            slots = [GpuSlot(i, entry, g[2], g[3]) for i, (entry, g) in enumerate(chosen)]
        else:
            slots = [GpuSlot(i, g[0], g[2], g[3]) for i, g in enumerate(found)]
    if not slots:
        return ()
    if selection in (None, "", "all"):
        return tuple(s for s in slots if s.name == slots[0].name)
    try:
        ordinals = [int(x) for x in selection.split(",")]
    except ValueError:
        raise CompileIQError(f"--gpus {selection!r}: give 'all' or visible GPU numbers such as 0,2") from None
    unknown = [o for o in ordinals if not 0 <= o < len(slots)]
    if unknown or len(set(ordinals)) != len(ordinals):
        raise CompileIQError(f"--gpus {selection!r}: this machine shows GPUs 0..{len(slots) - 1}; each at most once")
    return tuple(slots[o] for o in ordinals)
