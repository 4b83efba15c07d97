"""The Ray executor (`--executor ray`, `pip install 'compileiq-cmake[ray]'`): a tune's builds and benchmark
runs spread over the nodes and GPUs of a Ray cluster; the search, the statistics and the trial store stay in
this process (the driver).

- Files: the build directory must be on a filesystem every node mounts at the same path (NFS, Lustre, a
  Slurm job's shared home). Variant trees are built there by build tasks and their binaries run there by
  GPU workers; nothing goes through Ray's object store but flag sets and results. `check_shared()` proves it
  before any build: a task on every node reads a token the driver wrote.
- Builds: a Ray task each (1 CPU; retried by Ray when its worker dies), on any node with the toolchain.
- Benchmarks: one Ray actor per GPU (num_gpus=1, its node, its accelerator type), so a GPU never runs two
  benchmarks at once and each trial is compared with the baseline of the GPU it ran on, as on one host. A
  GPU worker that dies is restarted by Ray; the trial it was measuring is re-queued on a free GPU
  (executor.WorkerLost) and nothing finished is lost.
- GPU types: every accelerator type of the cluster is tuned, one after the other, each with its own GPUs, its
  own architecture, its own validation and its own TOML entry (types of one architecture share one entry:
  the first type's GPUs tune it); the loop over them is the tune's (tune.orchestration.run_ray_tune), this
  module only executes (ClusterPlacement: one GPU group of a connected cluster).

Without GPUs (CI): COMPILEIQ_SIMULATE_GPUS=1 in the driver's environment makes the GPU workers report a
simulated GPU whose architecture comes from the accelerator type's name (e.g. "SIM_SM80" -> sm_80)."""

from __future__ import annotations

import os
import re
import socket
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ..measure.gpu import SIMULATE_VARIABLE, GpuMonitor, GpuSlot, Placement, detect_gpu, visible_gpus
from ..measure.runner import Runner
from ..measure.runs import RunResult, Workload
from ..model.errors import CompileIQError, UsageError
from ..model.events import Log, as_stream
from ..model.records import BuildResult, FlagSet
from ..model.wording import plural
from ..project.cmake_project import VariantTree
from .executor import ExecutionPlan, Executor, WorkerLost

ACCELERATOR_PREFIX = "accelerator_type:"


def _ray():
    try:
        import ray  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise CompileIQError("--executor ray needs Ray: pip install 'compileiq-cmake[ray]'") from None
    return ray


@dataclass(frozen=True)
class GpuGroup:
    """The GPUs of one accelerator type: (node id, GPUs on that node) and what a worker on it reported."""

    accelerator: str  # Ray's accelerator type ("" when the cluster names none)
    nodes: tuple[tuple[str, int], ...]
    name: str
    arch: str
    sm_count: int

    @property
    def count(self) -> int:
        return sum(n for _, n in self.nodes)

    def describe(self) -> str:
        return f"{self.count} x {self.name} (sm_{self.arch}{', ' + self.accelerator if self.accelerator else ''})"


def _simulated_arch(accelerator: str) -> tuple[int, int]:
    m = re.search(r"SM_?(\d)(\d+)", accelerator.upper())
    return (int(m.group(1)), int(m.group(2))) if m else (9, 0)


class GpuWorker:
    """One GPU of the cluster (a Ray actor with num_gpus=1): runs benchmark runs of the tune's runner there.
    Ray re-runs __init__ with the same arguments when it restarts a worker that died."""

    def __init__(self, accelerator: str, runner: Runner | None = None) -> None:
        import ray  # noqa: PLC0415

        self.accelerator = accelerator
        self.node = ray.get_runtime_context().get_node_id()
        ids = [str(i) for i in ray.get_gpu_ids()]
        self.device = ",".join(ids) or os.environ.get("CUDA_VISIBLE_DEVICES", "")
        self.runner: Runner | None = None
        if runner is not None:
            os.environ["COMPILEIQ_WORKER"] = f"{self.node[:12]}/{self.device}"  # benchmarks may log where they ran
            self._adopt(runner)

    def _adopt(self, runner: Runner) -> None:
        """`runner` (a tune's, sent without this process's handles) runs here: on this worker's GPU, with its
        pid file and GPU monitor."""
        pid_file = Path(tempfile.gettempdir()) / f"compileiq-bench-{os.getpid()}.pid"
        simulated = bool(os.environ.get(SIMULATE_VARIABLE))
        here = GpuSlot(0, self.device, "worker GPU")
        meter = runner.meter
        if meter is not None and not simulated:  # the GPU this worker's CUDA_VISIBLE_DEVICES names, by PCI bus id
            seen = visible_gpus(None)
            meter = meter.for_gpu(seen[0]) if seen else None
        self.runner = replace(
            runner, gpu=here, pid_file=pid_file, monitor=None if simulated else GpuMonitor(), meter=meter
        )

    def info(self) -> tuple[str, str, str, str, tuple[int, int], int]:
        """(node id, host name, CUDA_VISIBLE_DEVICES, GPU name, compute capability, SM count)."""
        if os.environ.get(SIMULATE_VARIABLE):
            name, cc, sms = f"simulated {self.accelerator or 'GPU'}", _simulated_arch(self.accelerator), 0
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = self.device
            gpu = detect_gpu()
            name, cc, sms = gpu.name, gpu.compute_capability, gpu.sm_count
        return self.node, socket.gethostname(), self.device, name, cc, sms

    def run(self, tree: VariantTree, workload: Workload, reference: dict, runner: Runner | None = None) -> RunResult:
        """One run with the tune's runner; `runner`: another tune's (a suite's targets share the workers)."""
        if runner is not None and (
            self.runner is None or runner.spec != self.runner.spec or runner.bench != self.runner.bench
        ):
            self._adopt(runner)
        assert self.runner is not None  # (made with the tune's runner, or adopted one just now)
        self.runner.reference = reference
        return self.runner.run(tree, workload)

    def pid(self) -> int:
        return os.getpid()


def _check_node(path: str, token: str, tools: tuple[str, ...]) -> tuple[str, str]:
    """(host name, problem or ""): the token file is there with the token, the tools exist."""
    host = socket.gethostname()
    try:
        if Path(path).read_text() != token:
            return host, f"{path} holds something else"
    except OSError as exc:
        return host, f"cannot read {path} ({exc.strerror})"
    missing = [t for t in tools if t and not Path(t).exists()]
    return host, f"missing {', '.join(missing)}" if missing else ""


def _build_task(inner, tree: VariantTree, flagset: FlagSet) -> BuildResult:
    return inner.build(tree, flagset, None)


@dataclass
class RayRunner(Runner):
    """A runner whose runs happen on one GPU worker of the cluster."""

    worker: Any = None  # the GPU worker's actor handle (Ray's, untyped)
    # the tune's runner for each run (workers shared by a suite's targets): put into Ray's object store once per
    # tune, each run sends its reference (a replay's runner holds its landscape: tens of KB a run otherwise)
    base: Any = None

    def run(self, tree: VariantTree, workload: Workload) -> RunResult:
        ray = _ray()
        try:
            with self.holding():
                return ray.get(self.worker.run.remote(tree, workload, dict(self.reference), self.base))
        except (ray.exceptions.RayActorError, ray.exceptions.WorkerCrashedError, ray.exceptions.ObjectLostError) as exc:
            raise WorkerLost(f"{type(exc).__name__} on GPU {self.gpu.device if self.gpu else '?'}") from None

    def alive(self, wait: float = 120.0) -> bool:
        """Whether the GPU worker answers again (Ray restarts a worker that died, on its node) within `wait`
        seconds; False when Ray says it is gone for good (its node died)."""
        ray = _ray()
        deadline = time.monotonic() + wait
        while True:
            try:
                ray.get(self.worker.pid.remote(), timeout=max(1.0, deadline - time.monotonic()))
                return True
            except ray.exceptions.ActorUnavailableError:  # restarting
                if time.monotonic() > deadline:
                    return False
                time.sleep(0.5)
            except (ray.exceptions.RayActorError, ray.exceptions.GetTimeoutError):
                return False


@dataclass
class RayExecutor:
    """Builds as Ray tasks (the local or replay executor's build, run on a node of the cluster) and runs on
    the GPU workers of one GPU group."""

    inner: Executor  # the executor whose build the tasks run (LocalExecutor or ReplayExecutor)
    runner: Runner  # the first GPU worker's runner (baseline, validation, ablation)
    runners: dict[str, Runner]
    name: str = "ray"

    def __post_init__(self) -> None:
        ray = _ray()
        self._inner_ref = ray.put(self.inner)
        self._task = ray.remote(num_cpus=1, max_retries=3)(_build_task)

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        ray = _ray()
        try:
            return ray.get(self._task.remote(self._inner_ref, tree, flagset))
        except (ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError, ray.exceptions.ObjectLostError) as exc:
            raise WorkerLost(f"build task: {type(exc).__name__}") from None
        except ray.exceptions.RayTaskError as exc:
            raise CompileIQError(f"a build task failed on a node of the cluster: {str(exc).splitlines()[-1]}") from None

    def gpu_runners(self) -> dict[str, Runner]:
        return self.runners


CONNECT_SECONDS = 10.0  # an explicit --ray-address must answer a TCP connection within this


def _reachable(address: str | None) -> None:
    """An explicit host:port (or ray://host:port) that does not accept a connection is one line at once: Ray
    itself retries an unreachable address for minutes, printing warnings."""
    m = re.fullmatch(r"(?:ray://)?\[?([^\]/]+?)\]?:(\d+)", address or "")
    if not m:
        return  # none (a new local cluster), "auto", or a form Ray resolves itself
    try:
        socket.create_connection((m.group(1), int(m.group(2))), timeout=CONNECT_SECONDS).close()
    except (OSError, ValueError) as exc:
        raise UsageError(
            f"--ray-address {address}: nothing answers there within {CONNECT_SECONDS:g} s "
            f"({getattr(exc, 'strerror', None) or exc}); start the head with 'ray start --head' and "
            "give its address"
        ) from None


class RayCluster:
    """The connection to a Ray cluster for one tune command."""

    def __init__(self, address: str | None, log: Log) -> None:
        _reachable(address)
        ray = _ray()
        self.log = log
        env = {k: v for k, v in os.environ.items() if k in (SIMULATE_VARIABLE,)}
        env.update({k: v for k, v in os.environ.items() if k.startswith(("NCCL_", "TORCH_SYMM", "NVSHMEM_"))})
        try:
            ray.init(
                address=address,
                runtime_env={"env_vars": env} if env else None,
                log_to_driver=False,
                logging_level="ERROR",
                include_dashboard=False,
            )
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise CompileIQError(
                f"cannot connect to the Ray cluster at {address or '(a new local one)'}: "
                f"{str(exc).splitlines()[0]}; start it with 'ray start --head' or give --ray-address"
            ) from exc
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        self.nodes = nodes
        as_stream(log).info(
            f"Ray cluster{' at ' + address if address else ''}: {plural(len(nodes), 'node')}, "
            f"{plural(int(sum(n['Resources'].get('CPU', 0) for n in nodes)), 'CPU')}, "
            f"{plural(int(sum(n['Resources'].get('GPU', 0) for n in nodes)), 'GPU')}"
        )
        self._workers: list = []
        self.share_workers = False  # a suite: one set of GPU workers per group serves every target's tune
        self._group_workers: dict[str, list] = {}
        self._groups: tuple[GpuGroup, ...] | None = None
        self._lock = threading.RLock()  # a suite's targets ask for groups and workers from several threads

    def close(self) -> None:
        ray = _ray()
        for w in self._workers:
            ray.kill(w)
        self._workers = []
        self._group_workers = {}
        ray.shutdown()

    def _affinity(self, node: str):
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy  # noqa: PLC0415

        return NodeAffinitySchedulingStrategy(node_id=node, soft=False)

    def _worker_class(self, accelerator: str, restarts: int):
        ray = _ray()
        resources = {ACCELERATOR_PREFIX + accelerator: 0.001} if accelerator else {}
        return ray.remote(num_gpus=1, num_cpus=0, resources=resources, max_restarts=restarts, max_task_retries=0)(
            GpuWorker
        )

    def gpu_groups(self) -> list[GpuGroup]:
        """Every accelerator type of the cluster with its GPUs (a probe worker on one GPU of each type says
        which GPU it is); a cluster that names no type gives one group of all its GPUs. Probed once per
        connection (a suite's targets ask again while their workers hold the GPUs)."""
        with self._lock:
            return self._probe_groups()

    def _probe_groups(self) -> list[GpuGroup]:
        if self._groups is not None:
            return list(self._groups)
        ray = _ray()
        by_type: dict[str, list[tuple[str, int]]] = {}
        for n in self.nodes:
            gpus = int(n["Resources"].get("GPU", 0))
            if not gpus:
                continue
            types = [k[len(ACCELERATOR_PREFIX) :] for k in n["Resources"] if k.startswith(ACCELERATOR_PREFIX)]
            by_type.setdefault(types[0] if types else "", []).append((n["NodeID"], gpus))
        if not by_type:
            raise CompileIQError(
                "the Ray cluster has no GPU: start its nodes with GPUs (ray start --num-gpus N) "
                "or tune on a machine with one (leave --executor ray out)"
            )
        groups = []
        for accelerator, nodes in sorted(by_type.items(), key=lambda kv: (-sum(n for _, n in kv[1]), kv[0])):
            probe = (
                self._worker_class(accelerator, 0)
                .options(scheduling_strategy=self._affinity(nodes[0][0]))
                .remote(accelerator)
            )
            try:
                _, _, _, name, cc, sms = ray.get(probe.info.remote(), timeout=600)
            except Exception as exc:
                raise CompileIQError(
                    f"a GPU worker of type {accelerator or 'GPU'} failed to start: {str(exc).splitlines()[-1]}"
                ) from None
            finally:
                ray.kill(probe)
            groups.append(GpuGroup(accelerator, tuple(nodes), name, f"{cc[0]}{cc[1]}", sms))
        self._groups = tuple(groups)
        return groups

    def check_shared(self, state_dir: Path, tools: tuple[str, ...]) -> None:
        """Every node sees the build directory at the same path (a token the driver wrote) and has the tools
        (cmake, the compiler): else exit 2 naming the nodes and what they lack."""
        ray = _ray()
        state_dir.mkdir(parents=True, exist_ok=True)
        token_file = state_dir / f"ray-check-{uuid.uuid4().hex}"
        token = uuid.uuid4().hex
        token_file.write_text(token)
        try:
            task = ray.remote(num_cpus=0)(_check_node)
            answers = ray.get(
                [
                    task.options(scheduling_strategy=self._affinity(n["NodeID"])).remote(str(token_file), token, tools)
                    for n in self.nodes
                ]
            )
        finally:
            token_file.unlink(missing_ok=True)
        problems = [f"{host}: {why}" for host, why in answers if why]
        if problems:
            raise CompileIQError(
                "--executor ray needs the build directory on a filesystem that every node mounts at "
                f"the same path, and the toolchain on every node: {'; '.join(problems)}"
            )
        as_stream(self.log).info(
            f"every node of the cluster sees {state_dir.parent} (shared directory; binaries are not "
            "copied through Ray's object store)"
        )

    def executor(self, plan: ExecutionPlan, group: GpuGroup, inner: Executor) -> RayExecutor:
        """The executor of one group's tune: one GPU worker per GPU of the group, each with the tune's runner
        (`inner`'s, whose builds the build tasks run)."""
        with self._lock:  # one set of workers per group, however many targets ask at once
            return self._executor(plan, group, inner)

    def _executor(self, plan: ExecutionPlan, group: GpuGroup, inner: Executor) -> RayExecutor:
        base = replace(inner.runner, monitor=None, pid_file=None, gpu=None, lease=None)
        workers = self._group_workers.get(group.accelerator) if self.share_workers else None
        if workers is None:
            workers = []
            for node, count in group.nodes:
                for _ in range(count):
                    workers.append(
                        self._worker_class(group.accelerator, -1)
                        .options(scheduling_strategy=self._affinity(node))
                        .remote(group.accelerator, base)
                    )
            self._workers.extend(workers)
            _ray().get([w.pid.remote() for w in workers], timeout=600)
            if self.share_workers:
                self._group_workers[group.accelerator] = workers
        base_ref = _ray().put(base) if self.share_workers else None
        runners: dict[str, Runner] = {
            slot.device: RayRunner(
                plan.spec,
                plan.bench,
                None,
                inner.runner.reference,
                None,
                slot,
                worker=workers[slot.ordinal],  # (the group's GPUs in the order of `placement`; a suite lends a part)
                base=base_ref,
            )
            for slot in plan.gpus
        }
        first = next(iter(runners.values()))
        return RayExecutor(inner, first, runners)

    def placement(self, group: GpuGroup) -> Placement:
        slots: list[GpuSlot] = []
        for node, count in group.nodes:
            for i in range(count):
                slots.append(GpuSlot(len(slots), f"{node[:8]}/{i}", group.name))
        return Placement(tuple(slots), group.arch, group.describe() + " on Ray")


@dataclass(frozen=True)
class ClusterPlacement:
    """Where one tune of a Ray cluster runs: the connected cluster and the GPU group (one accelerator type)
    whose GPUs measure it."""

    cluster: RayCluster
    group: GpuGroup

    def placement(self) -> Placement:
        """The group's GPUs as the tune's setup sees them (labels, architecture, device name)."""
        return self.cluster.placement(self.group)
