"""The tune request, from the CMake function or the CLI, validated before anything is built."""

from __future__ import annotations

import hashlib
import json
import math
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from .errors import UsageError

METRIC_KEYWORDS = ("GBENCH", "NVBENCH", "WALLTIME")
OBJECTIVES = ("time", "energy")
CUDA_ARCH = re.compile(r"[1-9][0-9]{1,2}[af]?")  # as in sm_90, sm_90a, sm_100f


def compute_capability(arch: str) -> str:
    """ "90a" -> "9.0", "100" -> "10.0"."""
    match = re.match(r"\d+", arch)
    if match is None:
        raise ValueError(f"not a CUDA architecture: {arch!r}")
    digits = match.group(0)
    return f"{digits[:-1]}.{digits[-1]}"


@dataclass(frozen=True)
class MetricSpec:
    kind: str  # "regex" | "gbench" | "nvbench" | "walltime"
    pattern: str = ""
    lower_is_better: bool = True
    # a regex read from a file (a TOML's, for check): matched under this time limit (measure.metrics)
    regex_seconds: float | None = None

    @property
    def label(self) -> str:
        return self.pattern if self.kind == "regex" else self.kind.upper()

    @property
    def name(self) -> str:
        """A short name for column headers: the word before the number in a regex ('time_ms' of
        'time_ms=([0-9.]+)'), else what the keyword measures."""
        if self.kind == "regex":
            m = re.match(r"\^?([A-Za-z_][\w.]*)\s*[=:]", self.pattern)
            return m.group(1) if m else "metric"
        return {"walltime": "wall time (s)", "gbench": "time (GBENCH)", "nvbench": "time (NVBENCH)"}.get(
            self.kind, "metric"
        )

    @staticmethod
    def parse(text: str, lower_is_better: bool) -> MetricSpec:
        if text.upper() in METRIC_KEYWORDS:
            return MetricSpec(kind=text.lower(), lower_is_better=lower_is_better)
        try:
            compiled = re.compile(text)
        except re.error as exc:
            raise UsageError(f"--metric regex {text!r} does not compile: {exc}") from None
        if compiled.groups < 1:
            raise UsageError(
                f"--metric regex {text!r} needs one capture group around the number, e.g. 'time_ms=([0-9.eE+-]+)'"
            )
        return MetricSpec(kind="regex", pattern=text, lower_is_better=lower_is_better)


@dataclass(frozen=True)
class TuneSpec:
    source_dir: Path
    build_dir: Path
    target: str
    benchmark: tuple[str, ...]
    metric: MetricSpec
    output: Path
    pass_regex: str | None = None
    verify: tuple[str, ...] = ()
    workloads: tuple[tuple[str, ...], ...] = ((),)
    budget: int = 30
    per_file_budget: int = 0  # CUDA, several translation units: per-file trials after the search (0: none)
    time_limit: float | None = None
    include_flags: tuple[str, ...] = ()
    exclude_flags: tuple[str, ...] = ()
    seed: int = 0
    workers: int = 1
    repeats: int = 3
    timeout: float = 120.0
    min_gain: float | None = None  # None: derived from the baseline's noise (stats.auto_min_gain)
    cuda_arch: str | None = None  # override of the GPU's architecture (build-only use)
    config: str | None = None  # configuration (build type) to tune; default: the tree's, else Release
    compare_output: str | None = None  # regex of output lines whose numbers must match the baseline's
    compare_file: str | None = None  # a file the benchmark writes (relative to its working directory)
    rtol: float = 1e-5
    atol: float = 0.0
    warmup: int = 1  # runs per workload discarded before measuring
    max_repeats: int = 9  # search phase: promising trials are measured up to this many runs per workload
    race: bool = True  # search phase: a trial shown unable to beat the best stops its runs early (decide.racing)
    min_rounds: int = 5  # validation: interleaved rounds at least ...
    max_rounds: int = 30  # ... and at most (close calls need them: docs/statistics.md)
    screen: bool = True  # CUDA: drop flag values that change no device code before the search
    acf_files: tuple[str, ...] = ()  # the user's NVIDIA Advanced Control Files (--acf), tried as values
    acf_candidates: int = 16  # Advanced Control File candidates sampled from compileiq's space (0: none)
    acf_space: str = "default"  # compileiq's space: "default", "att" (ptxas, attention kernels) or "nvcc" (sm_100+)
    replay: str | None = None  # a landscape file: answer builds and benchmarks from it (no GPU)
    warm_start: tuple[str, ...] = ()  # compileiq.toml files whose flag sets are tried first
    gpus: str | None = None  # "all" (default: every visible GPU of the first one's model) or "0,2"
    json_summary: str | None = None  # also write the tune's summary document (summary.py) there
    executor: str = "local"  # "local" (this machine) or "ray" (the nodes and GPUs of a Ray cluster)
    ray_address: str | None = None  # --executor ray: "auto", "ray://host:10001", ...; None: a new local cluster
    replace: bool = False  # may replace an entry whose numerics were checked by one from a run with weaker checks
    portable: bool = False  # leave host-specific dimensions (-march=native) out of the search
    arch_scope: str = (
        "all"  # CUDA, recorded in the entry: "all" architectures the target builds get the flags, or "tuned"
    )
    prior: bool = True  # the learned prior orders the search (search/prior.py); --no-prior: today's order
    learn: bool = True  # add this tune's single-value effects to the local prior data (results/prior_store.py)
    flat_stop: int = 0  # suites: stop the search after this many trials when the prior predicted no gain and none came
    state_subdir: str = "compileiq"  # the tune's state folder under build_dir (a suite's targets in flight: one each)
    # suites: a target whose entry in the output was tuned on exactly what it is now (sources with headers, compile
    # flags, compiler, build type, device) is not tuned again (--replace tunes it anyway)
    keep_unchanged: bool = False
    step_cache: bool = True  # CUDA: the variant trees compile through the compile-step cache (--no-step-cache: not)
    # a flag set whose build took more than this x a typical build of the tune (the median) is never written
    max_compile_slowdown: float | None = None
    # what the search minimizes: "time" (the metric) or "energy" (joules per run, the GPU's counter)
    objective: str = "time"

    @property
    def lower_is_better(self) -> bool:
        """The direction of the values a tune compares: the metric's, or lower for energy (joules)."""
        return True if self.objective == "energy" else self.metric.lower_is_better

    @property
    def state_dir(self) -> Path:
        """The tune's state folder: variant trees, trial store, logs, lock."""
        return self.build_dir / self.state_subdir

    @property
    def checks_outputs(self) -> bool:
        """Whether anything tells a wrong answer from a right one (beyond the exit status)."""
        return bool(self.pass_regex or self.verify or self.compare_output or self.compare_file)

    @property
    def excluded_flags(self) -> tuple[str, ...]:
        """--exclude-flags, plus unsafe_numerics when nothing checks the results (see checks_outputs), plus
        cpu_specific with --portable."""
        exclude = self.exclude_flags + (
            ("cpu_specific",) if self.portable and "cpu_specific" not in self.exclude_flags else ()
        )
        if self.checks_outputs or "unsafe_numerics" in exclude:
            return exclude
        return (*exclude, "unsafe_numerics")

    def identity(self) -> str:
        """Hash of everything that makes trials comparable; a stored trial from another identity is ignored."""
        fields = asdict(self)
        for volatile in (
            "budget",
            "per_file_budget",
            "time_limit",
            "output",
            "workers",
            "seed",
            "min_rounds",
            "max_rounds",
            "warm_start",
            "replace",
            "gpus",
            "executor",
            "ray_address",
            "json_summary",
            "arch_scope",
            "prior",
            "learn",
            "flat_stop",
            "state_subdir",
            "keep_unchanged",
            "step_cache",
            "max_compile_slowdown",
            "race",
        ):
            fields.pop(volatile)
        if not self.portable:  # the identity of tunes stored before the option existed stays the same
            fields.pop("portable")
        if self.objective == "time":  # likewise: a time tune's trials are the same as before the option
            fields.pop("objective")
        blob = json.dumps(fields, sort_keys=True, default=str)
        return hashlib.sha256(blob.encode()).hexdigest()[:16]

    @property
    def checks(self) -> tuple[str, ...]:
        """What guards the results of this tune (recorded in the TOML; compare_* check the numerics)."""
        named = (
            ("pass_regex", self.pass_regex),
            ("verify", self.verify),
            ("compare_output", self.compare_output),
            ("compare_file", self.compare_file),
        )
        return tuple(name for name, value in named if value)

    def _check_numbers(self) -> None:
        """Every numeric and enumerated option, before anything runs (one line each, exit 2)."""
        self._check_ranges()
        self._check_choices()

    def _check_ranges(self) -> None:
        """The numeric options: whole numbers, seconds, tolerances, fractions and factors in range."""
        whole = (
            ("--budget", self.budget, 2),
            ("--per-file-budget", self.per_file_budget, 0),
            ("--repeats", self.repeats, 1),
            ("--workers", self.workers, 1),
            ("--max-repeats", self.max_repeats, 1),
            ("--warmup", self.warmup, 0),
            ("--max-rounds", self.max_rounds, 1),
            ("--min-rounds", self.min_rounds, 1),
        )
        for name, value, least in whole:
            if not isinstance(value, int) or value < least:
                raise UsageError(f"{name} {value} is out of range: give a whole number >= {least}")
        positive = (("--timeout", self.timeout), ("--time-limit", self.time_limit))
        for name, seconds in positive:
            if seconds is not None and not (math.isfinite(seconds) and seconds > 0):
                raise UsageError(f"{name} {seconds:g} is out of range: give a positive number of seconds")
        for name, tolerance in (("--rtol", self.rtol), ("--atol", self.atol)):
            if not (math.isfinite(tolerance) and tolerance >= 0):
                raise UsageError(f"{name} {tolerance:g} is out of range: give a finite number >= 0")
        if self.min_gain is not None and not (math.isfinite(self.min_gain) and 0 <= self.min_gain < 1):
            raise UsageError(f"--min-gain {self.min_gain:g} is out of range: give a fraction such as 0.01 (1%)")
        if self.max_compile_slowdown is not None and not (
            math.isfinite(self.max_compile_slowdown) and self.max_compile_slowdown >= 1
        ):
            raise UsageError(
                f"--max-compile-slowdown {self.max_compile_slowdown:g} is out of range: give a factor "
                ">= 1, e.g. 2 (a winner's build at most twice as long as the project's own)"
            )

    def _check_choices(self) -> None:
        """The enumerated options, and the executor's with the options it excludes."""
        if self.cuda_arch is not None and not CUDA_ARCH.fullmatch(self.cuda_arch):
            raise UsageError(
                f"--cuda-arch {self.cuda_arch!r} is not a CUDA architecture: give its number "
                "as in sm_XX, e.g. 90, 90a or 100f"
            )
        if self.objective not in OBJECTIVES:
            raise UsageError(f"--objective {self.objective!r}: give {' or '.join(OBJECTIVES)}")
        if self.arch_scope not in ("all", "tuned"):
            raise UsageError(f"--arch-scope {self.arch_scope!r}: give all or tuned")
        if self.executor not in ("local", "ray"):
            raise UsageError(f"--executor {self.executor!r}: give local or ray")
        if self.ray_address is not None and self.executor != "ray":
            raise UsageError(f"--ray-address {self.ray_address} was given without --executor ray; add it")
        if self.executor == "ray" and self.gpus is not None:
            raise UsageError(
                f"--gpus {self.gpus} selects GPUs of this machine; with --executor ray the cluster's "
                "GPUs are used: leave --gpus out"
            )
        if self.executor == "ray" and self.cuda_arch is not None:
            raise UsageError(
                "--cuda-arch with --executor ray: each GPU type of the cluster is tuned for its own "
                "architecture; leave --cuda-arch out"
            )

    def validate(self) -> TuneSpec:
        """The spec checked before anything runs (one line each, exit 2); itself."""
        if self.build_dir.exists() and not self.build_dir.is_dir():
            raise UsageError(f"-B {self.build_dir} is not a directory; give the project's build directory")
        if self.replay is not None:
            if not Path(self.replay).is_file():
                raise UsageError(
                    f"--replay {self.replay} does not exist; give a landscape file (benchmarks/landscapes/*.json)"
                )
            self._check_numbers()
            return self
        self._check_project()
        self._check_numbers()
        self._check_inputs()
        if self.output.exists() and self.output.is_dir():
            raise UsageError(f"--output {self.output} is a directory; give a file name such as compileiq.toml")
        self._check_outputs()
        return self

    def _check_project(self) -> None:
        """The project (-S), the target and the benchmark a tune needs."""
        if self.source_dir.exists() and not self.source_dir.is_dir():
            raise UsageError(
                f"-S {self.source_dir} is a file, not a directory; pass the project root (the folder "
                "holding CMakeLists.txt) with -S"
            )
        if not self.source_dir.is_dir():
            raise UsageError(f"source directory {self.source_dir} does not exist; pass the project root with -S")
        if not (self.source_dir / "CMakeLists.txt").is_file():
            raise UsageError(f"{self.source_dir} has no CMakeLists.txt; pass the project root with -S")
        if not self.target:
            raise UsageError("no target given; name the target to tune with --target")
        if not self.benchmark:
            raise UsageError("no benchmark command given; use --bench 'program args' (or BENCHMARK in CMake)")
        if self.budget < 2:
            raise UsageError(f"--budget {self.budget} is too small; it counts the baseline, use at least 2")

    def _check_inputs(self) -> None:
        """The files and regexes the tune reads: warm starts, the output's patterns, control files."""
        for path in self.warm_start:
            if not Path(path).is_file():
                raise UsageError(f"--warm-start {path} does not exist; give a compileiq.toml of an earlier tune")
        if self.rtol < 0 or self.atol < 0:
            raise UsageError("--rtol and --atol must not be negative")
        if self.compare_output is not None:
            try:
                re.compile(self.compare_output)
            except re.error as exc:
                raise UsageError(f"--compare-output {self.compare_output!r} does not compile: {exc}") from None
        if self.pass_regex is not None:
            try:
                re.compile(self.pass_regex)
            except re.error as exc:
                raise UsageError(f"--pass-regex {self.pass_regex!r} does not compile: {exc}") from None
        self._check_acf()

    def _check_acf(self) -> None:
        """The Advanced Control File options."""
        for acf in self.acf_files:
            if not Path(acf).is_file():
                raise UsageError(f"--acf {acf} is not a file; give an NVIDIA Advanced Control File")
        if not 0 <= self.acf_candidates <= 4096:
            raise UsageError(f"--acf-candidates {self.acf_candidates} is out of range; give 0 (none) to 4096")
        if self.acf_space not in ("default", "att", "nvcc"):
            raise UsageError(f"--acf-space {self.acf_space!r} is not a space: give default, att or nvcc")

    def _check_outputs(self) -> None:
        """What the tune writes must not destroy what it reads or keeps: the summary is never the TOML, nothing
        is written into the tool's own state folder (<build>/compileiq: the trial store), and an existing
        file at --json-summary must be a JSON document (a source file or a TOML is not overwritten)."""
        state = (self.build_dir / "compileiq").resolve()
        toml = self.output.resolve()
        if toml.is_relative_to(state):
            raise UsageError(
                f"--output {self.output} lies in {state}, the tool's own state folder; give a path "
                "outside it, such as <src>/compileiq.toml"
            )
        if self.json_summary is None:
            return
        summary = Path(self.json_summary).resolve()
        if summary == toml:
            raise UsageError(
                f"--json-summary {self.json_summary} is the --output TOML; give another file, such as summary.json"
            )
        if summary.is_relative_to(state):
            raise UsageError(
                f"--json-summary {self.json_summary} lies in {state}, the tool's own state folder (its "
                "trial store); give a path outside it"
            )
        if summary.is_file() and summary.stat().st_size:
            try:
                json.loads(summary.read_text(errors="strict"))
            except (ValueError, OSError):
                raise UsageError(
                    f"--json-summary {self.json_summary} exists and is not a JSON document: refusing to "
                    "overwrite it; give another file"
                ) from None
