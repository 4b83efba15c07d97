"""The one place that picks a tune's executor: replay (a recorded landscape), local (this machine's variant
trees and GPUs) or Ray (the local or replay executor's builds as Ray tasks, the runs on one GPU group of a
cluster). Every caller gets the Executor protocol and never branches on which."""

from __future__ import annotations

from pathlib import Path

from ..measure.runner import Runner
from .executor import ExecutionPlan, Executor, LocalExecutor, ReplayExecutor
from .ray import ClusterPlacement


def make_executor(plan: ExecutionPlan, pid_file: Path | None = None, cluster: ClusterPlacement | None = None) -> Executor:
    """The executor of a plan: its replay runner when it replays, else the local trees; on `cluster`, that
    one's builds run as Ray tasks and the runs on the group's GPU workers."""
    if plan.replay is not None:
        inner: Executor = ReplayExecutor(plan.replay, plan.gpus, plan.state_dir)
    else:
        inner = LocalExecutor(plan.build, Runner(plan.spec, plan.bench, plan.monitor, pid_file=pid_file),
                              plan.gpus, plan.state_dir)
    if cluster is None:
        return inner
    return cluster.cluster.executor(plan, cluster.group, inner)
