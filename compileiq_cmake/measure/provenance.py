"""Where a tune measured, beyond the device's name (issue 39): what a maintainer of a tuned CUDA library asks of
a tuning record so that `check` can tell a driver, compiler or clock change from a regression. For GPU tunes:
the driver and the CUDA version it supports, the GPU's SM and memory clocks (now and at most), its power
limit and ECC state (NVML, where nvidia-ml-py and a driver are present); for every tune: the host compiler
nvcc uses (CUDA) or the tuned compiler's own (host targets: already the entry's compiler) and the CPU.
A value that could not be read is "" and is never said to differ."""

from __future__ import annotations

import subprocess
from dataclasses import asdict, dataclass, fields

from ..flags.portability import compiler_kind
from .gpu import GpuSlot, host_cpu

LABELS = {
    "driver_version": "NVIDIA driver",
    "cuda_driver": "CUDA version of the driver",
    "host_compiler": "host compiler",
    "gpu_clocks": "GPU clocks",
    "power_limit": "GPU power limit",
    "ecc": "ECC",
    "cpu": "CPU",
}


@dataclass(frozen=True)
class Provenance:
    driver_version: str = ""
    cuda_driver: str = ""
    host_compiler: str = ""  # "<id> <version>" of the compiler nvcc hands host code to
    gpu_clocks: str = ""  # "sm <MHz> of <max> MHz, memory <MHz> MHz"
    power_limit: str = ""  # "<W> W"
    ecc: str = ""  # "on" / "off"
    cpu: str = ""

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    def entry_fields(self) -> dict[str, str]:
        """As FlagsEntry's fields (the CPU is `host_cpu` there: `tuned_cpu` is the one host-specific flags need)."""
        return {("host_cpu" if k == "cpu" else k): v for k, v in asdict(self).items()}

    @staticmethod
    def of_entry(entry) -> Provenance:
        return Provenance(
            **{f.name: getattr(entry, "host_cpu" if f.name == "cpu" else f.name) for f in fields(Provenance)}
        )

    @staticmethod
    def of(values: dict[str, str]) -> Provenance:
        known = {f.name for f in fields(Provenance)}
        return Provenance(**{k: str(v) for k, v in values.items() if k in known})

    def differences(self, here: Provenance) -> list[str]:
        """What differs on this machine, one phrase each, for the fields both know. The clocks are compared by
        their maximum (what the GPU may run at), not the moment's clock."""
        out = []
        for f in fields(Provenance):
            was, now = getattr(self, f.name), getattr(here, f.name)
            if f.name == "gpu_clocks":
                was, now = _max_clock(was), _max_clock(now)
            if was and now and was != now:
                out.append(f"{LABELS[f.name]}: tuned with {was}, here {now}")
        return out


def _max_clock(text: str) -> str:
    return text.split(" of ", 1)[1].split(",", 1)[0] if " of " in text else text


def compiler_text(path: str) -> str:
    """ "<id> <version>" of a compiler (gcc's full version: -dumpfullversion, which clang ignores, before
    -dumpversion; "" when it cannot be asked)."""
    if not path:
        return ""
    try:
        version = subprocess.run(
            [path, "-dumpfullversion", "-dumpversion"], capture_output=True, text=True, timeout=30
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return f"{compiler_kind(path)} {version}" if version else ""


def driver_cuda() -> str:
    """The CUDA version the installed driver supports ("13.0"; "" without nvidia-ml-py or a driver)."""
    try:
        import pynvml  # noqa: PLC0415 (nvidia-ml-py: optional)

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no library, no driver: unknown
        return ""
    try:
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        return f"{cuda // 1000}.{cuda % 1000 // 10}"
    except Exception:  # noqa: BLE001
        return ""
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass


def _gpu(gpu: GpuSlot) -> dict[str, str]:
    """NVML's view of the GPU ({} without nvidia-ml-py, a driver or a real GPU)."""
    if not gpu.pci_bus_id:  # simulated, or not known to NVML
        return {}
    try:
        import pynvml  # nvidia-ml-py

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - no library, no driver, no GPU: nothing to record
        return {}
    out: dict[str, str] = {}
    try:
        out["driver_version"] = _text(pynvml.nvmlSystemGetDriverVersion())
        cuda = pynvml.nvmlSystemGetCudaDriverVersion()
        out["cuda_driver"] = f"{cuda // 1000}.{cuda % 1000 // 10}"
        handle = pynvml.nvmlDeviceGetHandleByPciBusId(gpu.pci_bus_id.encode())
        for key, read in (
            (
                "gpu_clocks",
                lambda: (
                    f"sm {pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM)} of "
                    f"{pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)} MHz, "
                    f"memory {pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM)} MHz"
                ),
            ),
            ("power_limit", lambda: f"{pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000:.0f} W"),
            ("ecc", lambda: "on" if pynvml.nvmlDeviceGetEccMode(handle)[0] else "off"),
        ):
            try:
                out[key] = read()
            except Exception:  # noqa: BLE001 - a query this GPU does not answer: left out
                pass
    except Exception:  # noqa: BLE001
        pass
    finally:
        try:
            pynvml.nvmlShutdown()
        except Exception:  # noqa: BLE001
            pass
    return out


def _text(value) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def collect(host_compiler: str, gpu: GpuSlot | None) -> Provenance:
    """This machine's provenance: `host_compiler` the path of the compiler host code goes to ("" for none),
    `gpu` the GPU measured on (None: a host tune)."""
    return Provenance.of(
        {**(_gpu(gpu) if gpu is not None else {}), "host_compiler": compiler_text(host_compiler), "cpu": host_cpu()}
    )
