"""Variant build trees: configured once from the user's build settings (project/variant_settings.py), then
rebuilt per trial after the trial's flag fragment (project/fragment.py) changes. The user's own build tree is
only read (project/user_tree.py)."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..model import build_flags
from ..model.errors import CommandFailure, UsageError, first_error_line, write_log
from ..model.records import BuildResult
from ..model.timebox import Stop
from ..system.processes import run_process
from . import file_api
from .apply_decisions import ApplyDecisions
from .fragment import FRAGMENT_NAME, render_fragment
from .nvcc_command import FLAGS_FILE_NAME, source_flags_file_name
from .progress import BuildProgress
from .step_error import step_error, stopped_reason
from .user_tree import read_cache
from .variant_settings import VariantSettings

# seconds a variant tree's configure may take before it is stopped with everything it started (as a build is,
# after its timeout: a configure that hangs, e.g. on a download, must not hang the tune)
CONFIGURE_TIMEOUT = 3600.0
_COMPILED = re.compile(r"Building (?:CUDA|CXX|C) object (\S+)")


def _snapshot(source_dir: Path, build_dir: Path) -> dict[Path, tuple[int, int]]:
    """(mtime, size) of the files of the source tree (version-control folders and build trees inside it left
    out), to see whether a configure writes into it."""
    out: dict[Path, tuple[int, int]] = {}
    skip = {build_dir.resolve()}
    for root, dirs, files in os.walk(source_dir):
        dirs[:] = [
            d
            for d in dirs
            if d not in (".git", ".hg", ".svn")
            and (Path(root) / d).resolve() not in skip
            and not (Path(root) / d / "CMakeCache.txt").exists()
        ]
        for name in files:
            path = Path(root) / name
            try:
                st = path.stat()
            except OSError:
                continue
            out[path] = (st.st_mtime_ns, st.st_size)
    return out


RECORDS_FOLDER = "compileiq_variant_records"  # per target of `record`: <target>.txt (decisions), .sources


class VariantTree:
    """One reusable build tree under <build>/compileiq/ owned by one worker. `record`: the targets of a suite
    whose decisions every configure records (compileiq_variant_records/): then the tree, configured once in
    this run, serves each of them in turn without configuring again (prepare)."""

    def __init__(
        self,
        root: Path,
        name: str,
        cmake: str,
        config: str = "",
        logs: Path | None = None,
        record: tuple[str, ...] = (),
    ) -> None:
        self.path = root / name
        self.logs = logs if logs is not None else root / "logs"  # a suite's shared trees: the borrower's logs
        self.cmake = cmake
        self.config = config  # multi-config generators: built with --config <config>
        self.fragment = self.path / FRAGMENT_NAME
        self.flags_file = self.path / FLAGS_FILE_NAME  # a CUDA target's target-wide trial flags (no CMake re-run)
        # the CUDA source files whose per-file trial flags are in a file of their own (source_flags_file_name),
        # in the order they first got flags in this tree: a file keeps its place (empty when a trial has none for
        # it), so that the fragment stays as it was
        self.source_slots: list[str] = []
        self.changed_flags_files: frozenset[Path] = frozenset()  # what the last write_flags rewrote
        self.record = record
        self.configures = 0  # configures run by this object (a suite's summary counts them)
        self._cache_text: bytes | None = None  # CMakeCache.txt as the tool left it (configure or build)
        self._configured: str = ""  # the key of this run's last good configure (_configure_command)
        self._target, self._language = "", ""  # the fragment's, as last written

    def write_flags(
        self, target: str, language: str, cuda_arch: str, flags: tuple[str, ...], device_link: tuple[str, ...] = ()
    ) -> bool:
        """Render the trial fragment; returns True when its content changed (the next build re-runs CMake).
        A CUDA target's trial flags go to files nvcc reads at each compile (--options-file), which the sources
        that read them depend on: the target-wide flags to the tree's flags file, each source file's own flags
        to a file of that source (source_flags_file_name): a trial of them compiles the sources concerned again
        without CMake running again. Device LTO (and every flag beside it) stays in the fragment, the files then
        empty; a source file that gets per-file flags for the first time in this tree changes the fragment once."""
        if (target, language) != (self._target, self._language):
            self.source_slots = []  # another target's files
        self._target, self._language = target, language
        split = build_flags.split(flags)
        cuda = language == "CUDA"
        in_files = cuda and not split.device_lto
        if in_files:
            self.source_slots += [p for p, _ in split.sources if p not in self.source_slots]
        slots = tuple((p, str(self.path / source_flags_file_name(p))) for p in self.source_slots) if cuda else ()
        text = render_fragment(
            target,
            language,
            cuda_arch,
            () if in_files else flags,
            device_link,
            self.record,
            str(self.flags_file) if cuda else "",
            slots,
        )
        self.path.mkdir(parents=True, exist_ok=True)
        changed: set[Path] = set()
        if cuda:
            wanted = {self.flags_file: split.target if in_files else ()}
            for rel, file in slots:
                wanted[Path(file)] = split.of_source(rel) if in_files else ()
            for path, file_flags in wanted.items():
                content = "".join(f"{shlex.quote(f)}\n" for f in file_flags)
                if not path.is_file() or path.read_text() != content:
                    _write_whole(path, content)
                    changed.add(path)
        self.changed_flags_files = frozenset(changed)
        if self.fragment.is_file() and self.fragment.read_text() == text:
            return False
        _write_whole(self.fragment, text)
        return True

    @property
    def flags_file_changed(self) -> bool:
        """The last write_flags rewrote a trial flags file (the CUDA objects that read it compile again)."""
        return bool(self.changed_flags_files)

    def prepare(self, settings: VariantSettings, target: str, language: str) -> file_api.CodeModel:
        """The tree set to the project's own flags for `target` (its fragment written for `language` and
        settings.cuda_arch, no trial flags) and configured: the one write-then-configure of setup, the finalists'
        trees and screening. The code model it wrote. A tree of a suite (`record`) configured in this run with
        the same settings is not configured again: its records hold `target`'s decisions, and the next build
        re-runs CMake for the new fragment, as after any trial's."""
        self.write_flags(target, language, settings.cuda_arch, ())
        if (
            self.record
            and target in self.record
            and self._configured
            and self._configured == self._configure_key(settings)
            and (self.path / RECORDS_FOLDER / f"{target}.txt").is_file()
        ):
            return file_api.read_codemodel(self.path)
        return self.configure(settings, target, language)

    def prepare_watching(
        self, settings: VariantSettings, target: str, language: str, source_dir: Path, build_dir: Path
    ) -> tuple[file_api.CodeModel, list[Path]]:
        """prepare(), and the files of the source tree the configure wrote (a project whose configure writes
        into its source tree: its variant trees are then configured one at a time)."""
        before = _snapshot(source_dir, build_dir)
        model = self.prepare(settings, target, language)
        after = _snapshot(source_dir, build_dir)
        return model, sorted(p for p, stamp in after.items() if before.get(p) != stamp)

    def configure(
        self, settings: VariantSettings, target: str, language: str, timeout: float = CONFIGURE_TIMEOUT
    ) -> file_api.CodeModel:
        """Configure the tree (the initial cache from the user's settings, the trial fragment, the file API
        query); stopped with everything it started after `timeout` seconds. The code model it wrote."""
        if settings.cmake_version < (3, 24):
            raise UsageError(
                "compileiq_cmake needs CMake >= 3.24 (CMAKE_PROJECT_TOP_LEVEL_INCLUDES); pip install cmake"
            )
        self.path.mkdir(parents=True, exist_ok=True)
        if not self.fragment.is_file():
            self.write_flags(target, language, settings.cuda_arch, ())
        self._configured = ""
        init = self.path / "compileiq_init_cache.cmake"
        init.write_text(settings.initial_cache_script())
        file_api.write_query(self.path)
        cmd = self._configure_command(settings)
        proc = run_process(cmd, None, timeout)
        self.configures += 1
        if proc.returncode != 0:
            raise step_error(
                f"configuring the variant tree {self.path.name}", cmd, proc, self.log_path("configure"), timeout
            )
        write_log(self.log_path("configure"), cmd, proc.output)
        self._remember_cache()
        self._configured = self._configure_key(settings)
        return file_api.read_codemodel(self.path)

    def _configure_key(self, settings: VariantSettings) -> str:
        """What a configure of this tree depends on besides the fragment: its command and initial cache."""
        text = json.dumps([self._configure_command(settings), settings.initial_cache_script(), list(self.record)])
        return hashlib.sha256(text.encode()).hexdigest()

    def _configure_command(self, settings: VariantSettings) -> list[str]:
        return settings.configure_command(self.cmake, self.path, self.fragment)

    def _remember_cache(self) -> None:
        cache = self.path / "CMakeCache.txt"
        self._cache_text = cache.read_bytes() if cache.is_file() else None

    def restore_cache(self) -> bool:
        """Put back CMakeCache.txt as the tool left it if something else (a benchmark run in this tree) changed
        it since: what is measured must be built from the trial's flags only. True when it was restored."""
        cache = self.path / "CMakeCache.txt"
        if self._cache_text is None or not cache.is_file() or cache.read_bytes() == self._cache_text:
            return False
        cache.write_bytes(self._cache_text)
        return True

    def log_path(self, step: str) -> Path:
        """<build>/compileiq/logs/<tree>-<step>.log: the last configure or failed build of this tree."""
        return self.logs / f"{self.path.name}-{step}.log"

    def info(self, target: str = "") -> dict[str, str]:
        """What compileiq_variant.cmake recorded at the last configure (keys: "Files Read by the Tool" in
        cmake/CompileIQ.cmake; `decisions` reads them): for the fragment's target, or for `target`; a suite's
        tree reads its record of that target, the flags hash of the fragment's language."""
        name = target or self._target
        if self.record and name:
            record = _key_values(self.path / RECORDS_FOLDER / f"{name}.txt")
            language = self._language if name == self._target else ""
            if record:
                record["flags_sha256"] = record.get(f"flags_sha256_{language}", "")
            return record
        return _key_values(self.path / "compileiq_variant_info.txt")

    def source_lines(self, target: str = "") -> list[str]:
        """The source files' lines of sources_sha256 ("<path>\t<sha256>") as compileiq_variant.cmake wrote them
        at the last configure (_compileiq_source_lines); a suite's tree: from its record of the target."""
        name = target or self._target
        path = (
            self.path / RECORDS_FOLDER / f"{name}.sources"
            if self.record and name
            else self.path / "compileiq_variant_sources.txt"
        )
        return [ln for ln in path.read_text().splitlines() if ln] if path.is_file() else []

    def decisions(self, target: str = "") -> ApplyDecisions:
        """The CMake module's apply decisions for the tuned target (or `target`) at the last configure."""
        return ApplyDecisions.parse(self.info(target), self.path.name)

    def build(
        self,
        targets: tuple[str, ...],
        jobs: int,
        timeout: float,
        stop: Stop | None = None,
        progress: Callable[[str], object] | None = None,
        keep_going: bool = False,
    ) -> BuildResult:
        """Build `targets` with `jobs` jobs, stopped with everything it started after `timeout` seconds or by
        `stop`. `progress`: given a line of the build's progress (steps or percent done, elapsed, time left)
        when it has run BuildProgress.FIRST_AFTER seconds, then at most every BuildProgress.EVERY seconds.
        `keep_going`: past a failed step, everything that does not depend on it is still built (Ninja, Make)."""
        cmd = [self.cmake, "--build", str(self.path), "-j", str(jobs)]
        if self.config:
            cmd += ["--config", self.config]
        for t in targets:
            cmd += ["--target", t]
        if keep_going:
            generator = read_cache(self.path).get("CMAKE_GENERATOR", ("", ""))[1]
            cmd += ["--", "-k", "0"] if "Ninja" in generator else ["--", "-k"] if "Makefiles" in generator else []
        start = time.perf_counter()
        # its own session: a timeout ends ninja/make and the compilers (each in a process group of its own
        # under ninja) with cmake, so that nothing writes into the tree the next trial reuses
        watch = None
        if progress is not None:
            watch = BuildProgress(progress, f"build of {', '.join(targets)} in {self.path.name}").feed
        proc = run_process(cmd, None, timeout, stop=stop, on_output=watch)
        log = proc.output
        self._record_compiled(log)
        if proc.cancelled:  # the tune's stop token (interrupt, a cancelled trial, the box's end): not a failure
            return BuildResult(
                ok=False, seconds=time.perf_counter() - start, log_tail=proc.cancelled, cancelled=proc.cancelled
            )
        if proc.returncode is None:
            stopped = f"build {stopped_reason(proc, timeout)}"
            failure = CommandFailure(
                f"the build of {', '.join(targets)} in the variant tree {self.path.name}",
                tuple(cmd),
                None,
                "",
                write_log(self.log_path("build"), cmd, log),
                stopped,
            )
            return BuildResult(ok=False, seconds=time.perf_counter() - start, log_tail=stopped, failure=failure)
        seconds = time.perf_counter() - start
        if proc.returncode != 0:
            failure = CommandFailure(
                f"the build of {', '.join(targets)} in the variant tree {self.path.name}",
                tuple(cmd),
                proc.returncode,
                first_error_line(log),
                write_log(self.log_path("build"), cmd, log),
            )
            return BuildResult(ok=False, seconds=seconds, log_tail=failure.first_error, failure=failure)
        self._remember_cache()
        return BuildResult(ok=True, seconds=seconds, log_tail=log[-2000:])

    def up_to_date(self, targets: tuple[str, ...], timeout: float = 60.0) -> bool | None:
        """Whether `targets` need nothing built (Ninja's dry run); None when the generator cannot say."""
        if "Ninja" not in read_cache(self.path).get("CMAKE_GENERATOR", ("", ""))[1]:
            return None
        cmd = [self.cmake, "--build", str(self.path), *(a for t in targets for a in ("--target", t))]
        cmd += (["--config", self.config] if self.config else []) + ["--", "-n"]
        proc = run_process(cmd, None, timeout)
        return proc.returncode == 0 and "no work to do" in proc.output

    def _record_compiled(self, output: str) -> None:
        """Append the objects this build compiled (the build tool's "Building <LANG> object <file>" lines) to
        <logs>/<tree>-compiled.log, one line per build: what each trial rebuilt; and to <tree>-reconfigured.log
        whether CMake ran again in it."""
        objects = _COMPILED.findall(output)
        self.logs.mkdir(parents=True, exist_ok=True)
        with open(self.log_path("compiled"), "a") as f:
            f.write(" ".join(objects) + "\n")
        with open(self.log_path("reconfigured"), "a") as f:  # 1: CMake ran again in this build (a new fragment)
            f.write("1\n" if "Re-running CMake" in output else "0\n")

    def compile_commands(self, sources: tuple[Path, ...], target: str = "") -> list[dict[str, Any]]:
        """The compile commands of these sources; with `target`, only that target's (its objects go to
        CMakeFiles/<target>.dir/): a source that two targets compile has one command per target."""
        db = self.path / "compile_commands.json"
        if not db.is_file():
            return []
        wanted = {p.resolve() for p in sources}
        entries = [e for e in json.loads(db.read_text()) if Path(e["file"]).resolve() in wanted]
        if target:
            marker = f"CMakeFiles/{target}.dir/"
            own = [
                e
                for e in entries
                if marker in e.get("output", "")
                or marker in e.get("command", "")
                or any(marker in a for a in e.get("arguments", ()))
            ]
            return own or entries
        return entries

    def codemodel(self) -> file_api.CodeModel:
        return file_api.read_codemodel(self.path)


def _write_whole(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _key_values(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
