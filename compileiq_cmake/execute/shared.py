"""Resources shared by the tunes of a suite that run at the same time (issue 24): the build slots of this
machine and each GPU (or, for host targets, the host's one benchmark slot). Every build of every target takes
a build slot; every benchmark or VERIFY run takes its GPU's slot for the run's duration, so that two runs of
two targets never share a GPU and a GPU that one target leaves idle serves another at once.

When a slot frees and several targets wait for it, the one the `Priority` ranks first gets it: the suite's
scheduler ranks by expected gain per second (tune.suite). Each slot keeps its busy seconds and who held it,
the suite summary's time per target and GPU idle share."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from ..measure.gpu import GpuSlot
from ..measure.runner import Runner
from ..model.events import Log
from ..model.records import BuildResult, FlagSet
from ..project.cmake_project import VariantTree
from .executor import Executor

Priority = Callable[[str], float]  # owner -> rank (higher first)
BUILD = "build"
FREE_LOOK = 0.05  # seconds: a waiter for a free slot that another waiter ranks above looks again this soon


def gpu_key(device: str) -> str:
    """The slot of a run: its GPU, or "host" for a run on the process's own device or a CPU target."""
    return f"gpu:{device}" if device else "host"


@dataclass
class SlotUse:
    """One slot's use: busy seconds in all and per owner, how often each owner held it, and when it was held
    (perf_counter start and end of each hold)."""

    busy: float = 0.0
    by_owner: dict[str, float] = field(default_factory=dict)
    runs: dict[str, int] = field(default_factory=dict)
    spans: list[tuple[float, float]] = field(default_factory=list)

    def busy_within(self, start: float, end: float) -> float:
        """Seconds it was held between `start` and `end` (perf_counter)."""
        return sum(max(0.0, min(b, end) - max(a, start)) for a, b in self.spans)


class SharedSlots:
    """Counted slots by name ("build": N, "gpu:0": 1, ...; a name first asked for gets one slot); a waiter
    gets a free slot when no waiter ranked above it (by `priority`, ties first come) waits for the same name."""

    def __init__(self, capacity: dict[str, int], priority: Priority | None = None) -> None:
        self._capacity = dict(capacity)
        self._held: dict[str, int] = {}
        self._waiting: dict[str, list[tuple[int, str]]] = {}
        self._ticket = itertools.count()
        self._lock = threading.RLock()  # (re-entered: the priority asks device_use while a waiter looks)
        self._freed: dict[str, threading.Condition] = {}  # per slot name: its waiters, woken when it changes
        self._device: dict[str, tuple[float, int]] = {}  # owner -> its seconds and runs on GPU/host slots
        self.priority: Priority = priority or (lambda owner: 0.0)
        self.use: dict[str, SlotUse] = {}
        self._blocked: dict[str, int] = {}  # owner -> its waiters now
        self._blocked_since: dict[str, float] = {}
        self._waited: dict[str, float] = {}
        self._lent: dict[str, list[str]] = {}  # owner -> the GPU slots its runs use (Lease.place)
        self._starts: dict[str, int] = {}  # slot name -> runs that took it (measure.shared_reference)

    def _first(self, name: str) -> tuple[int, str]:
        return max(self._waiting[name], key=lambda w: (self.priority(w[1]), -w[0]))

    @contextmanager
    def hold(self, name: str, owner: str) -> Iterator[None]:
        with self._lock:
            self._capacity.setdefault(name, 1)
            freed = self._freed.get(name) or self._freed.setdefault(name, threading.Condition(self._lock))
            me = (next(self._ticket), owner)
            queue = self._waiting.setdefault(name, [])
            queue.append(me)
            blocked = self._held.get(name, 0) >= self._capacity[name] or self._first(name) != me
            if blocked:
                self._block(owner, +1)
            while self._held.get(name, 0) >= self._capacity[name] or self._first(name) != me:
                # ranks change as the tunes progress: look again now and then, soon when the slot is free (two
                # waiters that looked a moment apart may each have seen the other first)
                free = self._held.get(name, 0) < self._capacity[name]
                freed.wait(timeout=FREE_LOOK if free else 1.0)
            if blocked:
                self._block(owner, -1)
            queue.remove(me)
            self._held[name] = self._held.get(name, 0) + 1
            self._starts[name] = self._starts.get(name, 0) + 1
            freed.notify_all()  # (only this slot's waiters: the next in its queue may now be first)
        start = time.perf_counter()
        try:
            yield
        finally:
            seconds = time.perf_counter() - start
            with self._lock:
                self._held[name] -= 1
                use = self.use.setdefault(name, SlotUse())
                use.busy += seconds
                use.by_owner[owner] = use.by_owner.get(owner, 0.0) + seconds
                use.runs[owner] = use.runs.get(owner, 0) + 1
                use.spans.append((start, start + seconds))
                if name != BUILD:
                    held, runs = self._device.get(owner, (0.0, 0))
                    self._device[owner] = (held + seconds, runs + 1)
                freed.notify_all()

    def _block(self, owner: str, step: int) -> None:
        """Count `owner`'s waits for a slot (under the lock): the union of the intervals it had a waiter."""
        now = time.perf_counter()
        count = self._blocked.get(owner, 0)
        if step > 0 and count == 0:
            self._blocked_since[owner] = now
        elif step < 0 and count == 1:
            self._waited[owner] = self._waited.get(owner, 0.0) + now - self._blocked_since.pop(owner, now)
        self._blocked[owner] = count + step

    def waited(self, owner: str) -> float:
        """Seconds `owner` waited for slots other tunes held (intervals with a waiter of it, counted once):
        a suite's target is not charged for them (tune.budget)."""
        with self._lock:
            since = self._blocked_since.get(owner)
            return self._waited.get(owner, 0.0) + (time.perf_counter() - since if since is not None else 0.0)

    def lend(self, owner: str, offered: Sequence[str], count: int) -> list[str]:
        """`count` of the `offered` GPU slots for `owner`'s runs: those lent to the fewest tunes now, then the
        least busy so far, then in the order offered; they stay lent until `give_back`."""
        with self._lock:
            self._lent.pop(owner, None)
            lent = [n for names in self._lent.values() for n in names]
            load = {n: (lent.count(n), self.use[n].busy if n in self.use else 0.0) for n in offered}
            self._lent[owner] = sorted(offered, key=load.__getitem__)[: max(1, count)]
            return list(self._lent[owner])

    def give_back(self, owner: str) -> None:
        with self._lock:
            self._lent.pop(owner, None)

    def starts(self, name: str) -> int:
        """How many holds of the slot have begun, by any owner."""
        with self._lock:
            return self._starts.get(name, 0)

    def capacity(self, name: str) -> int:
        with self._lock:
            return self._capacity.get(name, 1)

    def device_use(self, owner: str) -> tuple[float, int]:
        """`owner`'s runs on the GPU (or host) slots: the seconds it held them, and how many runs."""
        with self._lock:  # (kept as the runs end: the scheduler asks for every waiter each time it looks)
            return self._device.get(owner, (0.0, 0))

    def idle_share_until(self, end: float) -> dict[str, float]:
        """Per GPU (or host) slot used at all: the share of the seconds from the first run on any of them to `end`
        (perf_counter) it was not running anything; {} when no run began before `end`."""
        with self._lock:
            devices = {n: u for n, u in sorted(self.use.items()) if n != BUILD and u.spans}
            start = min((u.spans[0][0] for u in devices.values()), default=end)
            if end <= start:
                return {}
            return {
                n: max(0.0, 1.0 - u.busy_within(start, end) / (self._capacity.get(n, 1) * (end - start)))
                for n, u in devices.items()
            }

    def idle_share(self, wall: float) -> dict[str, float]:
        """Per GPU (or host) slot used at all: the share of `wall` seconds it was not running anything."""
        with self._lock:
            return {
                n: max(0.0, 1.0 - u.busy / (self._capacity.get(n, 1) * wall)) if wall > 0 else 0.0
                for n, u in sorted(self.use.items())
                if n != BUILD
            }


@dataclass(frozen=True)
class Lease:
    """One tune's hold on the shared slots (a Runner's `lease`): `run(device)` around each run. `sharing`: the
    tunes in flight that share the GPUs (a suite's targets at a time): `place` lends this tune its part."""

    slots: SharedSlots
    owner: str
    sharing: int = 1

    def place(self, gpus: tuple[GpuSlot, ...]) -> tuple[GpuSlot, ...]:
        """The GPUs of `gpus` this tune's runs use: its part when several tunes share them (len // sharing,
        at least one, the least used ones), all of them otherwise. A suite's target thus measures its baseline
        on the GPUs it runs on, not on every GPU, and the targets' baselines and validations are spread."""
        if self.sharing <= 1 or len(gpus) <= 1:
            return gpus
        lent = set(self.slots.lend(self.owner, [gpu_key(g.device) for g in gpus], len(gpus) // self.sharing))
        return tuple(g for g in gpus if gpu_key(g.device) in lent)

    def end(self) -> None:
        """The tune ended: its GPUs count no more as lent to it."""
        self.slots.give_back(self.owner)

    def run(self, device: str):
        return self.slots.hold(gpu_key(device), self.owner)

    def started(self, device: str) -> int:
        """Runs begun on the device's slot by any tune of the suite (a baseline run shared between two trials
        must be the last run there: measure.shared_reference)."""
        return self.slots.starts(gpu_key(device))

    def build(self):
        return self.slots.hold(BUILD, self.owner)

    def waited(self) -> float:
        """Seconds this tune waited for slots that other tunes held (not charged to its time box)."""
        return self.slots.waited(self.owner)


@dataclass
class SharedExecutor:
    """An executor whose builds take a shared build slot and whose runners take their GPU's slot per run
    (made once: a runner keeps its reference numbers and a replay's random stream)."""

    inner: Executor
    lease: Lease
    _runner: Runner | None = field(default=None, repr=False)
    _gpu_runners: dict[str, Runner] | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def runner(self) -> Runner:
        if self._runner is None:
            self._runner = replace(self.inner.runner, lease=self.lease)
        return self._runner

    def build(self, tree: VariantTree, flagset: FlagSet, log: Log | None = None) -> BuildResult:
        with self.lease.build():
            return self.inner.build(tree, flagset, log)

    def gpu_runners(self) -> dict[str, Runner]:
        if self._gpu_runners is None:
            self._gpu_runners = {device: replace(r, lease=self.lease) for device, r in self.inner.gpu_runners().items()}
        return self._gpu_runners
