"""`BaselineTree`: a suite's variant tree that holds the baselines of its targets, built once by one parallel
build of all of them and priced per target from the build tool's own record of that build (Ninja's log)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..model.errors import UsageError
from ..model.records import BuildResult
from ..model.timebox import Stop
from .cmake_project import VariantTree


class BaselineTree(VariantTree):
    """A suite's tree that holds the baselines of its targets, made by one parallel build of all of them
    (tune.tree_pool.TreePool.baselines) and never built again. With no trial flags every target's baseline is
    the same build whichever target the fragment names (the variant module sets the architecture of every
    target), so the fragment stays as configured; a build of targets it holds does nothing, and a trial's
    flags are refused (no trial is built in it)."""

    def __init__(
        self,
        root: Path,
        name: str,
        cmake: str,
        config: str = "",
        logs: Path | None = None,
        record: tuple[str, ...] = (),
    ) -> None:
        super().__init__(root, name, cmake, config, logs, record)
        self.built: frozenset[str] = frozenset()  # the targets its one build made (empty: not built yet)
        self.target_seconds: dict[str, float] = {}  # per target built: what building it alone would take

    def write_flags(
        self, target: str, language: str, cuda_arch: str, flags: tuple[str, ...], device_link: tuple[str, ...] = ()
    ) -> bool:
        if flags:
            raise UsageError(
                f"the variant tree {self.path.name} holds a suite's baselines; no trial flags are built in it"
            )
        if not self.built:  # its configure (a fragment of an earlier run may name a target gone since)
            return super().write_flags(target, language, cuda_arch, flags, device_link)
        self._target, self._language = target, language
        return False

    def build(
        self,
        targets: tuple[str, ...],
        jobs: int,
        timeout: float,
        stop: Stop | None = None,
        progress: Callable[[str], object] | None = None,
        keep_going: bool = False,
    ) -> BuildResult:
        if not self.built:
            return super().build(targets, jobs, timeout, stop, progress, keep_going)
        missing = [t for t in targets if t not in self.built]
        if missing:
            return BuildResult(
                ok=False,
                seconds=0.0,
                log_tail=f"the baselines tree {self.path.name} holds no build of {', '.join(missing)}",
            )
        return BuildResult(
            ok=True, seconds=sum(self.target_seconds.get(t, 0.0) for t in dict.fromkeys(targets)), log_tail=""
        )

    def estimate_seconds(self, wall: float, jobs: int, artifacts: dict[str, tuple[Path, ...]]) -> None:
        """What building each built target alone would take (a trial's build is priced by it): from the build
        tool's own record of its steps (Ninja's .ninja_log: each output's start and end), the seconds of the
        target's objects (CMakeFiles/<target>.dir/) and of its files (`artifacts`, its link); without that
        record, the build's core-seconds shared out over the targets (`wall` x `jobs` / targets, at most
        `wall`)."""
        steps = _ninja_steps(self.path / ".ninja_log")
        even = min(wall, wall * jobs / max(1, len(self.built)))
        for name in self.built:
            files = {f.as_posix() for f in artifacts.get(name, ())}
            objects = [d for out, d in steps.items() if f"CMakeFiles/{name}.dir/" in out and out not in files]
            links = [d for out, d in steps.items() if out in files]
            if not objects and not links:
                self.target_seconds[name] = even
                continue
            # its objects compile in parallel (`jobs` at a time, never faster than the longest), then the link
            compile_s = max(max(objects, default=0.0), sum(objects) / max(1, jobs))
            self.target_seconds[name] = compile_s + sum(links)


def _ninja_steps(log: Path) -> dict[str, float]:
    """Output -> seconds of its last build step, from a Ninja log (v5+: start, end in ms, mtime, output, hash);
    empty when there is none (another generator)."""
    try:
        lines = log.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    steps: dict[str, float] = {}
    for line in lines[1:] if lines and lines[0].startswith("# ninja log") else ():
        parts = line.split("\t")
        if len(parts) >= 4 and parts[0].isdigit() and parts[1].isdigit():
            steps[parts[3]] = (int(parts[1]) - int(parts[0])) / 1000.0
    return steps
