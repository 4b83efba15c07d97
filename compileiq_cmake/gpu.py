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


def host_cpu() -> str:
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()
