"""A tune from its spec to its result: the lock and the state folder, the setup (tune.setup), the trial store,
then the stages in turn: Baseline (tune.baseline), SearchLoop (tune.search_loop), Finalists (tune.finalists)
and Publish (tune.publish), each a small object with typed inputs and outputs. On a Ray cluster,
run_ray_tune tunes each GPU type in turn (ClusterPlacement: the cluster and one GPU group). Every trial is
stored as soon as it finishes."""

from __future__ import annotations

import math
import os
import shutil
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from ..execute.factory import make_executor
from ..execute.ray import ClusterPlacement, GpuGroup, RayCluster
from ..execute.shared import Lease
from ..execute.step_cache import StepCache
from ..measure.gpu import SIMULATE_VARIABLE
from ..model.errors import CompileIQError
from ..model.events import EventStream, Log, Recorder, as_stream
from ..model.records import Status, Trial, TuneResult
from ..model.spec import TuneSpec
from ..model.timebox import Stop, TimeBox, no_wait
from ..model.wording import plural
from ..results import summary
from ..results.schema import numerics_checked
from ..results.store import TrialStore
from ..results.toml_io import check_output_writable, read_entries
from ..system.lock import TuneLock
from ..system.processes import kill_leftovers
from ..system.writable import check_output, disk_full_error, disk_full_words
from . import focus, host_side, prior_use
from .bank import Bank
from .baseline import Baseline
from .budget import BOX_RESULT, Budget, TimeTooShort, not_charged, resumed_box
from .finalists import Finalists
from .publish import BankWrite, Publish, unchanged_entry
from .replay_setup import replay_setup
from .search_loop import SearchLoop
from .setup import setup
from .tree_pool import TreePool
from .tree_warm import WarmTrees
from .tune_setup import TuneSetup


def run_tune(
    spec: TuneSpec,
    log: Log,
    cluster: ClusterPlacement | None = None,
    lease: Lease | None = None,
    pool: TreePool | None = None,
    stop: Stop | None = None,
    deadline: float = math.inf,
) -> TuneResult:
    """One tune. `cluster`: the Ray cluster and GPU group whose nodes build and whose GPUs run it
    (run_ray_tune); None: this machine. `lease`: the slots it shares with a suite's other tunes in flight;
    `pool`: the suite's variant trees it borrows (given back when it ends) instead of trees of its own."""
    spec = spec.validate()
    check_output_writable(spec.output, tune_inputs(spec))  # a result must not be lost for want of a place to write it
    check_summary_writable(spec)
    started = time.perf_counter()
    state_dir = spec.state_dir
    fresh_state = not state_dir.exists()
    shared_before = pool.shared_seconds(spec.target) if pool is not None else 0.0  # (a GPU type's tune before)
    stored_any = False
    try:
        with TuneLock(state_dir):
            killed = kill_leftovers(state_dir / "bench.pid")
            if killed:
                as_stream(log).info(
                    f"killed {plural(killed, 'benchmark process', 'benchmark processes')} left running by an "
                    "earlier, killed tune"
                )
            placement = cluster.placement() if cluster else None
            tune_setup = (
                replay_setup(spec, log, placement)
                if spec.replay
                else setup(
                    spec,
                    log,
                    placement,
                    gpu_here=cluster is None and not os.environ.get(SIMULATE_VARIABLE),
                    tree_pool=pool,
                )
            )
            if cluster:
                cluster.cluster.check_shared(state_dir, tune_setup.programs)
            tune_setup = _on_lent_gpus(tune_setup, lease, log)
            _check_replacement(tune_setup)
            store = _open_store(
                state_dir / "trials.sqlite",
                spec.identity() + "-" + tune_setup.devices.cuda_arch,
                f"{tune_setup.project.toolchain.compiler_id} {tune_setup.project.toolchain.version}",
                tune_setup.code.sources_sha256,
                log,
                tune_setup.code.commands_sha256,
            )
            try:
                shared = _shared_since(pool, spec.target, shared_before) if pool is not None else no_wait
                result = _stages(tune_setup, store, log, started, cluster, lease, stop, deadline, shared)
                stored_any = True
                return result
            finally:
                stored_any = stored_any or bool(store.load())
                store.close()
                if tune_setup.tools is not None and tune_setup.tools.step_cache_started:  # (a suite's: the suite)
                    close_step_cache(tune_setup.tools.step_cache, log)
    except OSError as exc:  # a write that failed: a full disk is one line, the state and logs kept
        full = disk_full_error(exc, state_dir)
        if full is None:
            raise
        raise full from None
    except CompileIQError as exc:
        full_disk = disk_full_words(state_dir)
        if full_disk:  # e.g. "the configure step did not finish" for want of space: say so, keep what is there
            raise CompileIQError(
                f"{exc}; {full_disk}: free some space and run the same command again (the state and logs in "
                f"{state_dir} are kept)"
            ) from None
        if fresh_state and not stored_any:  # nothing earned: no half-made state, but a log the error names stays
            _remove_state(state_dir, str(exc))
        raise
    finally:
        if pool is not None:  # the next target of the suite configures them for itself
            pool.give_back(str(state_dir))


def _shared_since(pool: TreePool, target: str, before: float) -> Callable[[], float]:
    """The seconds of a suite's shared setup this tune of `target` ran or waited for (not an earlier tune's of
    it: a Ray cluster's GPU types are tuned one after another)."""
    return lambda: max(0.0, pool.shared_seconds(target) - before)


def close_step_cache(cache: StepCache | None, log: Log) -> None:
    """What the compile-step cache served (said) and its server stopped."""
    if cache is None:
        return
    stats = cache.stats()
    if stats is not None:
        as_stream(log).info(f"compile-step cache: {stats.line()}")
    cache.stop()


def _check_replacement(setup: TuneSetup) -> None:
    """Refuse before any GPU time, not after: an entry of this target whose numerics were checked by output
    comparison is not replaced by a tune that compares nothing (unless --replace)."""
    spec = setup.spec
    if spec.replace or {"compare_output", "compare_file"} & set(spec.checks) or not spec.output.is_file():
        return
    key = (spec.target, setup.project.language, setup.devices.cuda_arch or setup.project.toolchain.compiler_id)
    old = next((e for e in read_entries(spec.output) if e.key == key), None)
    if old is not None and numerics_checked(old):
        raise CompileIQError(
            f"{spec.output} holds an entry for {spec.target} ({' '.join(old.flags) or 'no flags'}, {old.speedup}x) "
            f"whose numerics were checked ({', '.join(old.checks)}); this tune compares no output: give "
            "--compare-output/--compare-file as well, or --replace to replace it anyway"
        )


def _open_store(
    path: Path, identity: str, compiler: str, sources_sha256: str, log: Log, commands_sha256: str = ""
) -> TrialStore:
    """The trial store of this tune. When its trials were measured on other sources (the target's files and
    the headers they include), with other compile flags or with another compiler, they are stale: this tune's
    rows move to a store of their own beside it (kept, named in the log; the other tunes' trials stay) and
    this tune starts fresh."""
    # the stored key keeps its name "flags_sha256": the hash of the target's compile commands
    # (TuneSetup.commands_sha256)
    code = {"compiler": compiler, "sources_sha256": sources_sha256, "flags_sha256": commands_sha256}
    store = TrialStore(path, identity)
    if store.note:
        as_stream(log).info(f"{store.note}")
    stored = store.load_result("code")
    if store.load() and stored is not None and stored != code:
        was = stored if isinstance(stored, dict) else {}
        if was.get("compiler") != compiler:
            what = f"the compiler changed ({was.get('compiler')} -> {compiler})"
        elif was.get("sources_sha256") != sources_sha256:
            what = "the target's sources or the headers they include changed"
        else:
            what = "the flags that reach the target's compile commands changed (its build tree was configured anew)"
        aside, moved = store.archive("stale")
        as_stream(log).info(
            f"{what} since the stored trials were measured; they are not reused: this tune's "
            f"{plural(moved, 'trial')} {'is' if moved == 1 else 'are'} kept in {aside} (other tunes' trials in "
            f"{path.name} stay) and it starts fresh"
        )
    store.save_result("code", code)
    return store


def _remove_state(state_dir: Path, error: str) -> None:
    """The state folder a failed first tune made, removed but for the logs `error` names."""
    for child in state_dir.iterdir() if state_dir.is_dir() else ():
        if child.name == "logs" and child.is_dir():  # only the logs the error names stay
            for log_file in child.iterdir():
                if str(log_file) not in error:
                    log_file.unlink(missing_ok=True)
            if not any(child.iterdir()):
                child.rmdir()
        else:
            shutil.rmtree(child, ignore_errors=True) if child.is_dir() else child.unlink(missing_ok=True)
    if state_dir.is_dir() and not any(state_dir.iterdir()):
        state_dir.rmdir()


def _stages(
    setup: TuneSetup,
    store: TrialStore,
    log: Log,
    started: float,
    cluster: ClusterPlacement | None = None,
    lease: Lease | None = None,
    stop: Stop | None = None,
    deadline: float = math.inf,
    shared: Callable[[], float] = no_wait,
) -> TuneResult:
    """The stages of one tune, wired: each one's outcome is the next one's input. One Budget owns its seconds
    (tune.budget): its box counts from the tune's start, less the time it waited for a suite's shared slots
    (`lease`, up to its limit: budget.not_charged) and spent on a suite's shared setup (`shared`: the own
    tree, the pool trees' first configures, the one baseline build), plus what an interrupted
    earlier run spent of the same box; `deadline` (perf_counter) and `stop` are a suite's end and interrupt."""
    spec = setup.spec
    unchanged = _unchanged(setup, log, started)
    if unchanged is not None:
        return unchanged
    as_stream(log).info(
        f"tuning {spec.target} ({setup.project.language}, {setup.project.toolchain.compiler_id} "
        f"{setup.project.toolchain.version}"
        f"{', sm_' + setup.devices.cuda_arch if setup.devices.cuda_arch else ''}) on {setup.devices.device}; "
        f"flag space {len(setup.space.dimensions)} dimensions, {setup.space.size} points; budget {spec.budget}"
    )
    box = _time_box(spec, store, log, started, lease, deadline, shared)
    budget = Budget(spec, box, Stop(box, parent=stop))
    executor = make_executor(
        setup.execution_plan, pid_file=setup.state_dir / "bench.pid", cluster=cluster, lease=lease, stop=budget.stop
    )
    stream = as_stream(log)
    recorder = Recorder()  # the summary's subscriber: the tune's notes, warnings and stage results
    unsubscribe = stream.subscribe(recorder)
    was = stream.stage
    warm = WarmTrees()  # the focus's other trees, built before the search (tune.tree_warm)
    try:
        stream.stage = "baseline"
        stream.phase("baseline")
        try:
            base = Baseline(setup, executor, store, stream, budget).run()
        except TimeTooShort as exc:
            return _too_short(setup, exc, budget, stream, log, started)
        setup = host_side.with_host_side(setup, base.runner, spec.excluded_flags, stream)  # host time dominates
        warm.start(setup, executor, base.runner, budget.stop, stream)
        setup = focus.with_focus(setup, base.runner, stream)  # a target of many files: its hot files' flags
        warm.keep(setup.focus is not None)
        budget.spec = setup.spec  # (the focus may have fewer trials in flight: the plan's costs per trial)
        stream.stage = "search"
        stream.phase("search")
        use = prior_use.prepare(setup, store, base, stream)
        searching = warm.waiting(executor)
        bank = Bank(setup, searching, store, stream, base, budget, BankWrite(setup, stream), Bank.restored(store))
        if bank.banked is not None:
            stream.info(
                f"bank: {bank.banked.flagset.describe()} ({bank.banked.geomean_speedup:.4f}x) validated by the "
                "earlier run of this tune: restored",
                stage="search",
            )
        search = SearchLoop(setup, searching, store, stream, started, base, budget, use.prior, bank).run()
        warm.close()
        if search.space is not None and search.space != setup.space:  # control files an engine added
            setup = replace(setup, space=search.space)
        stream.stage = "finalists"
        stream.phase("validation")
        decision = Finalists(
            setup, executor, store, stream, base, search.trials, budget, bank.banked, bank.validations
        ).run()
        budget.check()  # an interrupt during the finalists: nothing is written after it
        prior_use.learn(setup, use, search.trials, base, store, stream)
        stream.stage = "publish"
        stream.phase("publish")
        result = Publish(setup, store, stream, started, base, search, decision, recorder, budget).run()
        store.save_result(BOX_RESULT, budget.record(finished=True))
        return result
    finally:
        warm.close(stopping="the tune ended before its search")  # (a no-op once the search closed it)
        stream.stage = was
        unsubscribe()


def _unchanged(setup: TuneSetup, log: Log, started: float) -> TuneResult | None:
    """With --keep-unchanged: the result of a target unchanged since its entry was tuned (not tuned again)."""
    spec = setup.spec
    if not spec.keep_unchanged or spec.replace or (kept := unchanged_entry(setup)) is None:
        return None
    why = (
        f"{spec.target} is unchanged since its entry in {spec.output} was tuned ({kept.speedup:.4g}x, "
        f"{kept.date}): the same sources with their headers, compile flags, compiler, build type and device; "
        "it is not tuned again (--replace tunes it anyway)"
    )
    as_stream(log).stage_result("finalists", why, flags=list(kept.flags), speedup=kept.speedup, unchanged=True)
    empty = Trial(0, setup.space.baseline(), Status.CANCELLED, why)
    return TuneResult(
        spec.target,
        (),
        empty,
        None,
        str(spec.output),
        time.perf_counter() - started,
        (why,),
        language=setup.project.language,
        unchanged=(kept.speedup, tuple(kept.flags)),
    )


def _time_box(
    spec: TuneSpec,
    store: TrialStore,
    log: Log,
    started: float,
    lease: Lease | None,
    deadline: float,
    shared: Callable[[], float],
) -> TimeBox:
    """The tune's time box: from its start, less the suite's shared waits, plus an interrupted run's seconds."""
    box = TimeBox(
        spec.time_limit,
        started=started,
        spent_before=resumed_box(store.load_result(BOX_RESULT), spec),
        waited=not_charged(lease.waited, shared, spec.time_limit) if lease is not None else shared,
        deadline=deadline,
    )
    if box.spent_before:
        as_stream(log).info(
            f"time box: resuming a tune of --time-limit {spec.time_limit:g} s that had spent "
            f"{box.spent_before:.0f} s of it; {box.remaining():.0f} s are left (finished stages are restored)"
        )
    return box


def _too_short(
    setup: TuneSetup, exc: TimeTooShort, budget: Budget, stream: EventStream, log: Log, started: float
) -> TuneResult:
    """The result of a tune whose box could not hold the baseline: nothing measured, and the limit it needs."""
    spec = setup.spec
    stream.stage_result(
        "finalists",
        f"no flag set was measured within {budget.limit_text()}: {exc}",
        flags=None,
        needed=exc.needed,
    )
    if spec.time_limit is not None:
        as_stream(log).info(
            f"time box: the whole tune took {time.perf_counter() - started:.1f} s of "
            f"--time-limit {spec.time_limit:g} s; it needs at least --time-limit {math.ceil(exc.needed)}"
        )
    empty = Trial(0, setup.space.baseline(), Status.CANCELLED, str(exc))
    return TuneResult(
        spec.target,
        (),
        empty,
        None,
        None,
        time.perf_counter() - started,
        (str(exc),),
        language=setup.project.language,
        needed=exc.needed,
    )


def tune_inputs(spec: TuneSpec) -> tuple[Path, ...]:
    """The files a tune reads that its outputs must never replace."""
    named = (*spec.warm_start, *spec.acf_files, spec.replay, spec.compare_file)
    return tuple(Path(p) for p in named if p)


def check_summary_writable(spec: TuneSpec) -> None:
    """Before a tune spends time: its --json-summary is a new path or a summary this tool wrote, none of its
    inputs, never a device, pipe or symbolic link (one line, exit 2, nothing written)."""
    if spec.json_summary:
        check_output(
            Path(spec.json_summary),
            "--json-summary",
            summary.written_by_tool,
            "a JSON summary",
            (spec.output, *tune_inputs(spec)),
        )


def run_ray_tune(spec: TuneSpec, log: Log) -> list[TuneResult]:
    """Tune on a Ray cluster: each GPU type in turn (host targets: once), one TOML entry per architecture."""
    spec = spec.validate()  # bad input: one line and exit 2 before any cluster is joined
    check_output_writable(spec.output, tune_inputs(spec))
    check_summary_writable(spec)
    cluster = RayCluster(spec.ray_address, log)
    try:
        return tune_on_cluster(spec, log, cluster)
    finally:
        cluster.close()


def _on_lent_gpus(tune_setup: TuneSetup, lease: Lease | None, log: Log) -> TuneSetup:
    """A suite's target runs on its part of the GPUs (Lease.place: the least used), said once."""
    gpus = tune_setup.devices.gpus
    lent = lease.place(gpus) if lease is not None else gpus
    if lease is None or lent == gpus:
        return tune_setup
    as_stream(log).info(
        f"suite: {plural(len(lent), 'GPU')} of the {len(gpus)} for this target's runs ("
        + ", ".join(g.describe() for g in lent)
        + f"; {lease.sharing} targets in flight share them, each its least used part)"
    )
    return replace(tune_setup, devices=replace(tune_setup.devices, gpus=lent))


def tune_on_cluster(
    spec: TuneSpec,
    log: Log,
    cluster: RayCluster,
    lease: Lease | None = None,
    pool: TreePool | None = None,
    stop: Stop | None = None,
    deadline: float = math.inf,
) -> list[TuneResult]:
    """One target on a connected cluster: each GPU type (one per architecture) in turn, a host target once.
    `lease`: the slots it shares with a suite's other targets in flight (their tunes share the GPU workers)."""
    groups = cluster.gpu_groups()
    seen: dict[str, GpuGroup] = {}
    for g in groups:
        if g.arch in seen:
            as_stream(log).note(
                f"{g.describe()} has the architecture of {seen[g.arch].describe()}; that type's GPUs tune sm_" + g.arch
            )
        else:
            seen[g.arch] = g
    results = []
    for i, group in enumerate(seen.values()):
        as_stream(log).info(f"GPU type {i + 1} of {len(seen)}: {group.describe()}")
        result = run_tune(
            spec, log, cluster=ClusterPlacement(cluster, group), lease=lease, pool=pool, stop=stop, deadline=deadline
        )
        results.append(result)
        if result.language != "CUDA":
            if len(seen) > 1:
                as_stream(log).note(
                    f"{spec.target} is a {result.language} target: tuned once, on "
                    f"{group.describe()}; the other GPU types would measure the same host code"
                )
            break
    return results
