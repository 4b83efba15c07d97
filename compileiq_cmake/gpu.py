"""The GPU being tuned on, through pycuda (an optional extra, imported lazily)."""

from __future__ import annotations

from dataclasses import dataclass

from .errors import CompileIQError


@dataclass(frozen=True)
class GpuInfo:
    name: str
    compute_capability: tuple[int, int]
    sm_count: int

    @property
    def arch(self) -> str:
        major, minor = self.compute_capability
        return f"{major}{minor}"


def detect_gpu(ordinal: int = 0) -> GpuInfo:
    try:
        import pycuda.driver as cuda  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise CompileIQError(
            "benchmarking a CUDA target needs pycuda: pip install 'compileiq-cmake[gpu]'"
        ) from None
    try:
        cuda.init()
        if cuda.Device.count() == 0:
            raise CompileIQError("no CUDA GPU found; CUDA targets can only be tuned on a machine with a GPU")
        dev = cuda.Device(ordinal)
        sms = dev.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
        return GpuInfo(name=dev.name(), compute_capability=dev.compute_capability(), sm_count=int(sms))
    except cuda.Error as exc:
        raise CompileIQError(f"no usable CUDA GPU ({exc}); CUDA targets can only be tuned on a machine with a GPU") from None


_SLOWDOWN_REASONS = {  # NVML clock event (throttle) reason bits that mean the GPU was slowed down
    0x4: "sw_power_cap", 0x8: "hw_slowdown", 0x20: "sw_thermal", 0x40: "hw_thermal", 0x80: "hw_power_brake",
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

    def __init__(self, ordinal: int = 0) -> None:
        self._nvml = None
        self._handle = None
        try:
            import pynvml  # noqa: PLC0415 (optional)

            pynvml.nvmlInit()
            self._handle = pynvml.nvmlDeviceGetHandleByIndex(ordinal)
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
            reasons_fn = getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None) or nv.nvmlDeviceGetCurrentClocksThrottleReasons
            bits = int(reasons_fn(self._handle))
        except Exception:
            return None
        return GpuState(int(clock), int(temp), tuple(name for bit, name in _SLOWDOWN_REASONS.items() if bits & bit))


def host_cpu() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()
