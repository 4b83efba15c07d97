"""Variant build trees: configured once from the user's build settings, then rebuilt per trial after the
trial's flag fragment (rendered from templates/) changes. The user's own build tree is only read."""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jinja2

from ..model import build_flags
from ..model.errors import CommandFailure, ProjectCommandError, UsageError, first_error_line, write_log
from ..model.records import BuildResult
from ..model.timebox import Stop
from ..system.processes import ProcessResult, run_process
from ..system.resources import cmake_dir, templates_dir
from . import file_api
from .nvcc_command import FLAGS_FILE_NAME, source_flags_file_name
from .progress import BuildProgress

FRAGMENT_NAME = "compileiq_trial_flags.cmake"
# seconds a variant tree's configure may take before it is stopped with everything it started (as a build is,
# after its timeout: a configure that hangs, e.g. on a download, must not hang the tune)
CONFIGURE_TIMEOUT = 3600.0
_CACHE_LINE = re.compile(r"^([A-Za-z_][A-Za-z0-9_.+-]*)(?::([A-Z]+))?=(.*)$")
_COMPILED = re.compile(r"Building (?:CUDA|CXX|C) object (\S+)")
_FORWARD_TYPES = {"BOOL", "STRING", "PATH", "FILEPATH", "UNINITIALIZED"}
_NOT_FORWARDED = {
    "CMAKE_PROJECT_TOP_LEVEL_INCLUDES",
    "CMAKE_EXPORT_COMPILE_COMMANDS",
    "CMAKE_CUDA_ARCHITECTURES",
    "CMAKE_CACHEFILE_DIR",
    "CMAKE_HOME_DIRECTORY",
    "compileiq_cmake_DIR",
}


def cmake_quote(text: str) -> str:
    """A quoted CMake argument that cannot end the string or expand variables."""
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$") + '"'


def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        autoescape=False,
    )
    env.filters["cmake_quote"] = cmake_quote
    return env


def render_fragment(
    target: str,
    language: str,
    cuda_arch: str,
    flags: tuple[str, ...],
    device_link: tuple[str, ...] = (),
    record: tuple[str, ...] = (),
    flags_file: str = "",
    source_files: tuple[tuple[str, str], ...] = (),
) -> str:
    """`flags`: a flag set's tokens (build_flags: target flags, -dlto, [path]flag). `device_link`: a static or
    object library's consumers whose device link gets -dlto under device LTO (the benchmark's). `record`: the
    targets whose apply decisions each configure records (a suite's shared trees). `source_files`: (path, file)
    of the source files whose per-file trial flags nvcc reads from a file of their own."""
    template = _environment().get_template("variant_flags.cmake.j2")
    b = build_flags.split(flags)
    return template.render(
        target=target,
        language=language,
        cuda_arch=cuda_arch,
        flags=list(b.target),
        device_lto=b.device_lto,
        device_link=list(device_link) if b.device_lto else [],
        sources=[(p, list(f)) for p, f in b.sources],
        record=list(record),
        flags_file=flags_file,
        source_files=[list(pair) for pair in source_files],
    )


def read_cache(build_dir: Path) -> dict[str, tuple[str, str]]:
    """Entries of <build>/CMakeCache.txt as name -> (type, value); empty when the tree is not configured."""
    cache = build_dir / "CMakeCache.txt"
    entries: dict[str, tuple[str, str]] = {}
    if not cache.is_file():
        return entries
    for line in cache.read_text(errors="replace").splitlines():
        if not line or line.startswith(("#", "//")):
            continue
        m = _CACHE_LINE.match(line)
        if m:
            entries[m.group(1)] = (m.group(2) or "UNINITIALIZED", m.group(3))
    return entries


def host_compiler_of(cache: dict[str, tuple[str, str]]) -> str:
    """The host compiler nvcc uses: CMAKE_CUDA_HOST_COMPILER of a tree's cache, else PATH's g++ or c++ ("": none)."""
    return cache.get("CMAKE_CUDA_HOST_COMPILER", ("", ""))[1] or shutil.which("g++") or shutil.which("c++") or ""


def find_cmake(user_cache: dict[str, tuple[str, str]]) -> str:
    """The cmake that configured the user's tree, else the one installed beside this Python, else PATH's."""
    configured = user_cache.get("CMAKE_COMMAND", ("", ""))[1]
    if configured and Path(configured).is_file():
        return configured
    beside = Path(sys.executable).parent / "cmake"
    if beside.is_file():
        return str(beside)
    found = shutil.which("cmake")
    if not found:
        raise UsageError("cmake not found; pip install cmake or put cmake on PATH")
    return found


def cmake_version(cmake: str) -> tuple[int, int]:
    out = subprocess.run([cmake, "--version"], capture_output=True, text=True, check=False).stdout
    m = re.search(r"(\d+)\.(\d+)", out)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


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


@dataclass(frozen=True)
class VariantSettings:
    """How every variant tree of one tune is configured."""

    source_dir: Path
    cmake: str
    generator: str
    cmake_version: tuple[int, int]  # `cmake --version`, asked once (from_user_tree), not at every configure
    cache: dict[str, tuple[str, str]] = field(default_factory=dict)
    cuda_arch: str = ""
    config: str = ""  # multi-config generators: the one configuration the variant trees have and build
    user_cuda_architectures: str = ""  # the user's CMAKE_CUDA_ARCHITECTURES, used when no cuda_arch is forced
    user_includes: str = ""  # the user's CMAKE_PROJECT_TOP_LEVEL_INCLUDES, kept before the tool's own
    cuda_launcher: str = ""  # CMAKE_CUDA_COMPILER_LAUNCHER of the trees: the step cache's, else the user's own

    @staticmethod
    def from_user_tree(
        source_dir: Path, build_dir: Path, cuda_arch: str, config: str | None = None
    ) -> tuple[VariantSettings, list[str]]:
        """Settings copied from the user's configured tree (generator, build type, compilers, options).
        `config` picks the configuration to tune (default: the tree's CMAKE_BUILD_TYPE, else Release);
        with a multi-config generator the variant trees get only that one configuration."""
        notes: list[str] = []
        user = read_cache(build_dir)
        generator = user.get("CMAKE_GENERATOR", ("", ""))[1] or ("Ninja" if shutil.which("ninja") else "Unix Makefiles")
        if config:
            _check_config(config, user, generator)
        cache = forwarded_cache(user)
        chosen = ""
        if is_multi_config(generator):
            chosen = config or "Release"
            cache["CMAKE_CONFIGURATION_TYPES"] = ("STRING", chosen)
            cache.pop("CMAKE_BUILD_TYPE", None)
            notes.append(
                f"multi-config generator ({generator}): tuning the {chosen} configuration"
                + ("" if config else " (--config to choose another)")
            )
        elif config:
            own = cache.get("CMAKE_BUILD_TYPE", ("", ""))[1]
            cache["CMAKE_BUILD_TYPE"] = ("STRING", config)
            if own and own != config:
                notes.append(f"tuning the {config} build type (--config) although the build tree is {own}")
        elif lacks_build_type(cache, generator):
            cache["CMAKE_BUILD_TYPE"] = ("STRING", DEFAULT_BUILD_TYPE)
            notes.append(f"no CMAKE_BUILD_TYPE in the user's build tree: tuning a {DEFAULT_BUILD_TYPE} build")
        cmake = find_cmake(user)
        return VariantSettings(
            source_dir=source_dir,
            cmake=cmake,
            generator=generator,
            cache=cache,
            cuda_launcher=user.get("CMAKE_CUDA_COMPILER_LAUNCHER", ("", ""))[1],
            cuda_arch=cuda_arch,
            config=chosen,
            cmake_version=cmake_version(cmake),
            user_cuda_architectures=user.get("CMAKE_CUDA_ARCHITECTURES", ("", ""))[1],
            user_includes=user.get("CMAKE_PROJECT_TOP_LEVEL_INCLUDES", ("", ""))[1],
        ), notes

    def initial_cache_script(self) -> str:
        return initial_cache_script(self.cache)


STANDARD_CONFIGS = ("Debug", "Release", "RelWithDebInfo", "MinSizeRel")
DEFAULT_BUILD_TYPE = "Release"  # what a tune (and check) of a single-config tree without a build type builds


def lacks_build_type(cache: dict[str, tuple[str, str]], generator: str) -> bool:
    """Whether a single-config tree has no CMAKE_BUILD_TYPE (then DEFAULT_BUILD_TYPE is tuned and checked)."""
    return not is_multi_config(generator) and not cache.get("CMAKE_BUILD_TYPE", ("", ""))[1]


def project_configs(user: dict[str, tuple[str, str]], generator: str) -> list[str]:
    """The configurations a build tree has: a multi-config generator's CMAKE_CONFIGURATION_TYPES; else CMake's
    four, the tree's CMAKE_BUILD_TYPE and every <CONFIG> of a CMAKE_<LANG>_FLAGS_<CONFIG> its cache defines."""
    if is_multi_config(generator):
        listed = [c for c in user.get("CMAKE_CONFIGURATION_TYPES", ("", ""))[1].split(";") if c]
        return listed or list(STANDARD_CONFIGS)
    found = list(STANDARD_CONFIGS)
    own = user.get("CMAKE_BUILD_TYPE", ("", ""))[1]
    for name in [own, *(m.group(1) for k in user if (m := re.match(r"CMAKE_(?:C|CXX|CUDA)_FLAGS_([A-Z0-9_]+)$", k)))]:
        if name and name.upper() not in (c.upper() for c in found):
            found.append(name)
    return found


def _check_config(config: str, user: dict[str, tuple[str, str]], generator: str) -> None:
    """--config must name a configuration of the tree (case as CMake compares build types: insensitive)."""
    known = project_configs(user, generator)
    if config.upper() in (c.upper() for c in known):
        return
    close = difflib.get_close_matches(config, known, 1)
    raise UsageError(
        f"--config {config!r} is not a configuration of this build tree ({', '.join(known)})"
        + (f": did you mean {close[0]!r}?" if close else "")
    )


def forwarded_cache(user: dict[str, tuple[str, str]], keep: frozenset[str] = frozenset()) -> dict[str, tuple[str, str]]:
    """The user's cache entries another tree of the project is configured with (variant trees; `check`'s
    trees, which `keep` CMAKE_CUDA_ARCHITECTURES): options, paths and compilers, not the tool's own."""
    return {
        name: entry
        for name, entry in user.items()
        if entry[0] in _FORWARD_TYPES
        and (name not in _NOT_FORWARDED or name in keep)
        and not name.startswith("COMPILEIQ_")
    }


def top_level_includes(user: str, own: Path) -> str:
    """CMAKE_PROJECT_TOP_LEVEL_INCLUDES of another tree of the project: the user's own files (from their
    cache: a dependency provider, ...) first, then the tool's `own` (CMake takes a list). The tool's files in
    the user's list (a release tree that applies a compileiq.toml) are left out: `own` decides."""
    tool = {"compileiq_apply.cmake", "compileiq_variant.cmake"}
    return ";".join([*(p for p in user.split(";") if p and Path(p).name not in tool), str(own)])


def initial_cache_script(cache: dict[str, tuple[str, str]]) -> str:
    """A `cmake -C` script that sets these cache entries."""
    lines = ["# written by compileiq_cmake: the user's cache entries, replayed in a variant tree"]
    for name, (typ, value) in sorted(cache.items()):
        typ = "STRING" if typ == "UNINITIALIZED" else typ
        lines.append(f'set({name} {cmake_quote(value)} CACHE {typ} "" FORCE)')
    return "\n".join(lines) + "\n"


def is_multi_config(generator: str) -> bool:
    """Generators that hold several configurations in one tree (build with --config)."""
    return "Multi-Config" in generator or generator.startswith("Visual Studio") or generator == "Xcode"


@dataclass(frozen=True)
class ApplyDecisions:
    """What the CMake module decided for the tuned target at a variant tree's last configure, read from
    compileiq_variant_info.txt (its keys: "Files Read by the Tool" in cmake/CompileIQ.cmake). The apply rules
    (build type, architectures, relocatable device code, device LTO, CMAKE_<LANG>_FLAGS[_<CONFIG>]) live in the
    CMake module only; the tool reads their outcome here instead of re-deriving them."""

    config: str  # the configuration the tree builds: the entry's build_type, which the apply compares
    flags_sha256: str  # _compileiq_flags_sha256, which the apply compares (stale entries)
    relocatable: bool  # _compileiq_relocatable: the target builds relocatable device code
    device_lto_refusal: str  # _compileiq_device_lto_refusal: why the apply refuses device LTO ("" when it accepts it)
    cuda_archs: tuple[str, ...]  # _compileiq_cuda_archs of the project's own build (before a tree forces its own)
    cuda_archs_every: bool  # they are all / all-major: every entry's architecture matches

    @staticmethod
    def parse(info: dict[str, str], tree: str) -> ApplyDecisions:
        """From compileiq_variant_info.txt's keys; a tree that recorded none refuses device LTO with a reason."""
        return ApplyDecisions(
            config=info.get("config", ""),
            flags_sha256=info.get("flags_sha256", ""),
            relocatable=info.get("relocatable") == "1",
            device_lto_refusal=info.get(
                "device_lto_refusal", f"the variant tree {tree} recorded no device-LTO decision"
            ),
            cuda_archs=tuple(a for a in info.get("cuda_archs", "").split(",") if a),
            cuda_archs_every=info.get("cuda_archs_every") == "1",
        )

    def applies_to_arch(self, arch: str) -> bool:
        """Whether the apply matches an entry of CUDA architecture `arch` with this build (its list, as the module
        decided it)."""
        return self.cuda_archs_every or arch in self.cuda_archs


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
        output = proc.output
        log = write_log(self.log_path("configure"), cmd, output)
        self.configures += 1
        if proc.returncode is None:
            raise ProjectCommandError(
                CommandFailure(
                    f"configuring the variant tree {self.path.name}",
                    tuple(cmd),
                    None,
                    first_error_line(output),
                    log,
                    stopped_reason(proc, timeout),
                )
            )
        if proc.returncode != 0:
            raise ProjectCommandError(
                CommandFailure(
                    f"configuring the variant tree {self.path.name}",
                    tuple(cmd),
                    proc.returncode,
                    first_error_line(output),
                    log,
                )
            )
        self._remember_cache()
        self._configured = self._configure_key(settings)
        return file_api.read_codemodel(self.path)

    def _configure_key(self, settings: VariantSettings) -> str:
        """What a configure of this tree depends on besides the fragment: its command and initial cache."""
        text = json.dumps([self._configure_command(settings), settings.initial_cache_script(), list(self.record)])
        return hashlib.sha256(text.encode()).hexdigest()

    def _configure_command(self, settings: VariantSettings) -> list[str]:
        init = self.path / "compileiq_init_cache.cmake"
        includes = top_level_includes(settings.user_includes, cmake_dir() / "compileiq_variant.cmake")
        cmd = [
            self.cmake,
            "-S",
            str(settings.source_dir),
            "-B",
            str(self.path),
            "-G",
            settings.generator,
            "-C",
            str(init),
            f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={includes}",
            f"-DCOMPILEIQ_VARIANT_FRAGMENT={self.fragment}",
            f"-Dcompileiq_cmake_DIR={cmake_dir()}",
            "-DCOMPILEIQ_TUNE=OFF",
            "-DCOMPILEIQ_APPLY=OFF",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        ]
        if settings.cuda_arch:
            cmd.append(f"-DCMAKE_CUDA_ARCHITECTURES={settings.cuda_arch}-real")
        elif settings.user_cuda_architectures:
            cmd.append(f"-DCMAKE_CUDA_ARCHITECTURES={settings.user_cuda_architectures}")
        else:  # the project's own choice, not what an earlier configure of this tree (another target's) forced
            cmd.append("-UCMAKE_CUDA_ARCHITECTURES")
        # always named: a tree configured by an earlier run with the cache keeps no stale launcher
        cmd.append(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={settings.cuda_launcher}")
        return cmd

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


def _write_whole(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _key_values(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def stopped_reason(proc: ProcessResult, timeout: float) -> str:
    """How a configure or build that compileiq stopped ended: "timed out after N s" or "stopped: printed too
    much output", and whether some of its processes could not be ended."""
    still = "" if proc.ended else "; some of its processes could not be ended"
    why = f"timed out after {timeout:.0f} s" if proc.timed_out else "stopped: printed too much output"
    return why + still
