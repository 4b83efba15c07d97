"""The one place that picks a tune's executor: replay (a recorded landscape), local (this machine's variant
trees and GPUs) or Ray (the local or replay executor's builds as Ray tasks, the runs on one GPU group of a
cluster). Every caller gets the Executor protocol and never branches on which."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..measure.runner import Runner
from ..model.timebox import Stop
from .executor import ExecutionPlan, Executor, LocalExecutor, ReplayExecutor
from .ray import ClusterPlacement
from .shared import Lease, SharedExecutor


def make_executor(
    plan: ExecutionPlan,
    pid_file: Path | None = None,
    cluster: ClusterPlacement | None = None,
    lease: Lease | None = None,
    stop: Stop | None = None,
) -> Executor:
    """The executor of a plan: its replay runner when it replays, else the local trees; on `cluster`, that
    one's builds run as Ray tasks and the runs on the group's GPU workers; with a `lease` (a suite's targets
    in flight together), its builds and runs take the suite's shared slots. `stop`: the tune's stop token
    (tune.budget): builds and runs on this machine end when it is set or the box ends; a Ray task on another
    node is not reached by it (its result is dropped instead)."""
    if plan.replay is not None:
        inner: Executor = ReplayExecutor(replace(plan.replay, stop=stop), plan.gpus, plan.state_dir)
    else:
        context = replace(plan.build, stop=stop) if plan.build is not None else None
        inner = LocalExecutor(
            context,
            Runner(plan.spec, plan.bench, plan.monitor, pid_file=pid_file, stop=stop, meter=plan.meter),
            plan.gpus,
            plan.state_dir,
        )
    if cluster is not None:
        inner = cluster.cluster.executor(plan, cluster.group, inner)
    return SharedExecutor(inner, lease) if lease is not None else inner
