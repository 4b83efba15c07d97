"""`compileiq-cmake check`, its scratch trees under <build>/compileiq/check[/<target>]: each configured from the
user's cache with a flags file applied through compileiq_apply.cmake (or none applied: the plain tree), what
the apply recorded there per entry (COMPILEIQ_CHECK_FILE), and their builds. Every configure and build is
stopped, with everything it started, after --build-timeout seconds; a failed one is project.step_error's."""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path

from ..project.file_api import write_query
from ..project.step_error import step_error
from ..project.variant_settings import forwarded_cache, initial_cache_script, top_level_includes
from ..system.processes import run_process
from ..system.resources import cmake_dir
from .schema import FlagsEntry
from .toml_io import write_entry


def run_step(cmd: list[str], cwd: Path, what: str, timeout: float) -> None:
    """A configure or build: run in its own process group, which is killed (cmake, make/ninja, compilers,
    whatever they started) when it takes longer than timeout seconds."""
    res = run_process(cmd, cwd, timeout)
    if res.returncode == 0:
        return
    log_path = cwd.parent.parent / "logs" / f"check-{cwd.name}-{'configure' if '--build' not in cmd else 'build'}.log"
    stopped = f"did not finish within {timeout:g} s and was stopped with everything it started"
    raise step_error(
        what,
        cmd,
        res,
        log_path,
        timeout,
        stopped=stopped if res.timed_out else "",
        hint="give it longer with --build-timeout" if res.timed_out else "",
    )


@dataclass(frozen=True)
class CheckTrees:
    """How one check configures and builds its trees, under `root`: from `source_dir` with the user's cache
    entries (`user`), by `cmake`, each step stopped after `timeout` seconds (--build-timeout)."""

    root: Path  # <build>/compileiq/check, or its folder of one target (a CTest gate per target)
    source_dir: Path
    user: dict[str, tuple[str, str]]
    cmake: str
    timeout: float

    def configure(self, tree: Path, toml: Path, apply: bool, record: Path | None) -> None:
        """Configure `tree` with the flags file `toml` applied (or not); `record`: where the apply records,
        per entry, whether it applied and why not, and whether it is stale (`read_records`)."""
        source_dir, user = self.source_dir, self.user
        tree.mkdir(parents=True, exist_ok=True)
        init = tree / "compileiq_check_cache.cmake"
        init.write_text(initial_cache_script(forwarded_cache(user, keep=frozenset({"CMAKE_CUDA_ARCHITECTURES"}))))
        write_query(tree)
        generator = user.get("CMAKE_GENERATOR", ("", "Unix Makefiles"))[1]
        includes = top_level_includes(
            user.get("CMAKE_PROJECT_TOP_LEVEL_INCLUDES", ("", ""))[1], cmake_dir() / "compileiq_apply.cmake"
        )
        cmd = [
            self.cmake,
            "-S",
            str(source_dir),
            "-B",
            str(tree),
            "-G",
            generator,
            "-C",
            str(init),
            f"-DCMAKE_PROJECT_TOP_LEVEL_INCLUDES={includes}",
            f"-Dcompileiq_cmake_DIR={cmake_dir()}",
            f"-DCOMPILEIQ_FLAGS_FILE={toml}",
            f"-DCOMPILEIQ_APPLY={'ON' if apply else 'OFF'}",
            "-DCOMPILEIQ_TUNE=OFF",
            "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        ]
        if record is not None:
            record.unlink(missing_ok=True)
            cmd.append(f"-DCOMPILEIQ_CHECK_FILE={record}")
        run_step(cmd, tree, f"configuring {source_dir} into {tree}", self.timeout)

    def build(self, tree: Path, jobs: int) -> None:
        run_step([self.cmake, "--build", str(tree), "-j", str(jobs)], tree, f"building {tree}", self.timeout)


def read_records(path: Path) -> dict[tuple[str, str], dict]:
    """What the apply recorded per (target, arch): applies, why, stale reasons."""
    out: dict[tuple[str, str], dict] = {}
    for line in path.read_text().splitlines() if path.is_file() else ():
        target, arch, status, text = (line.split("\t", 3) + ["", "", "", ""])[:4]
        rec = out.setdefault((target, arch), {"applies": False, "why": "", "stale": [], "cpu": "", "archs": ""})
        if status == "applied":
            rec.update(applies=True, why=text)
        elif status == "stale":
            rec["stale"].append(text)
        elif status in ("cpu", "archs"):
            rec[status] = text
        elif status == "sources":
            rec["why"] += f"; {text}"
        else:
            rec.update(applies=False, why=text)
    return out


def entry_file(entry: FlagsEntry, toml: Path, where: Path) -> Path:
    """A flags file that holds only this entry, with copies of its --apply-controls files at the same paths
    relative to it as beside the committed file."""
    where.mkdir(parents=True, exist_ok=True)
    path = where / "compileiq.toml"
    path.unlink(missing_ok=True)
    for rel, _ in entry.acf_sha256:
        (where / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(toml.parent / rel, where / rel)
    write_entry(path, entry)
    return path
