"""The `tune --suite` command: the suite from its file or the command line, run, and its exit status."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

from ..model.errors import UsageError
from ..model.events import EventStream
from ..model.suite import Suite, SuiteTarget, load_suite
from ..model.wording import plural
from ..tune.suite import run_suite
from .parser import FLAT_STOP, _spec_from_args, build_parser


def suite_command(args: argparse.Namespace, events: EventStream) -> int:
    """tune --suite: every target's options through the command line's own checks (_spec_from_args)."""
    suite = load_suite(Path(args.suite))
    source = Path(args.source_dir).resolve() if args.source_dir else suite.source_dir
    build = Path(args.build_dir).resolve() if args.build_dir else suite.build_dir
    if source is None or build is None:
        raise UsageError(f"--suite {args.suite}: give -S and -B, or source_dir and build_dir in its [suite] table")
    if args.target:
        raise UsageError("--target and --suite exclude each other: the suite file names its targets")
    output = args.output or (str(suite.output) if suite.output else None)

    def make_spec(target, time_limit: float | None):
        ns = argparse.Namespace(
            **{
                **vars(args),
                "source_dir": str(source),
                "build_dir": str(build),
                "target": target.name,
                "output": output,
                "json_summary": None,
                "include_flags": None,
                "exclude_flags": None,
                "workload": [],
            }
        )
        for dest, value in target.options.items():
            setattr(ns, dest, value)
        if args.include_flags and not target.options.get("include_flags"):
            ns.include_flags = args.include_flags
        if args.exclude_flags and not target.options.get("exclude_flags"):
            ns.exclude_flags = args.exclude_flags
        if time_limit is not None:
            ns.time_limit = time_limit
        try:
            return replace(_spec_from_args(ns), flat_stop=FLAT_STOP, keep_unchanged=True).validate()
        except UsageError as exc:
            raise UsageError(f"--suite {args.suite} target {target.name}: {exc}") from None

    time_limit = args.time_limit if args.time_limit is not None else suite.time_limit
    json_summary = Path(args.json_summary).resolve() if args.json_summary else suite.json_summary
    return suite_status(
        run_suite(
            suite,
            make_spec,
            events,
            time_limit,
            build,
            json_summary=json_summary,
            jobs=args.suite_jobs,
            gpus=args.gpus,
            on_ray=args.executor == "ray",
            ray_address=args.ray_address,
        ),
        events,
    )


def _blocks(path: Path) -> list[list[str]]:
    """The "[target]" blocks of a --suite-args file: each one compileiq_tune() call's tune arguments."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise UsageError(
            f"cannot read the suite of compileiq_tune() calls {path} ({exc.strerror or exc}); "
            "configure the project again with -DCOMPILEIQ_TUNE=ON"
        ) from None
    blocks: list[list[str]] = []
    for line in text.splitlines():
        if line == "[target]":
            blocks.append([])
        elif blocks:
            blocks[-1].append(line)
    if not blocks:
        raise UsageError(f"{path} names no compileiq_tune() call; configure the project again with -DCOMPILEIQ_TUNE=ON")
    return blocks


def suite_args(args: argparse.Namespace, events: EventStream) -> int:
    """tune --suite-args FILE (the CMake route): each "[target]" block of FILE is one compileiq_tune() call's
    tune arguments, parsed as the command line would; they run as one suite."""
    path = Path(args.suite_args)
    blocks = _blocks(path)
    parser = build_parser()
    targets, namespaces = [], {}
    for argv in blocks:
        ns = parser.parse_args(["tune", *argv])
        namespaces[ns.target] = ns
        targets.append(SuiteTarget(name=ns.target, options={}))
    first = namespaces[targets[0].name]
    suite = Suite(
        path=path.resolve(),
        targets=tuple(targets),
        source_dir=Path(first.source_dir).resolve(),
        build_dir=Path(first.build_dir).resolve(),
    )

    def make_spec(target, time_limit: float | None):
        ns = argparse.Namespace(**vars(namespaces[target.name]))
        if time_limit is not None:
            ns.time_limit = min(time_limit, ns.time_limit) if ns.time_limit else time_limit
        try:
            return replace(_spec_from_args(ns), flat_stop=FLAT_STOP, keep_unchanged=True).validate()
        except UsageError as exc:
            raise UsageError(f"compileiq_tune({target.name}): {exc}") from None

    on_ray = {ns.ray_address for ns in namespaces.values() if ns.executor == "ray"}
    if on_ray and (
        len(on_ray) > 1 or len(on_ray) * len(namespaces) != sum(ns.executor == "ray" for ns in namespaces.values())
    ):
        raise UsageError(
            "the compileiq_tune() calls of one suite run either all on one Ray cluster (EXECUTOR ray, one "
            "RAY_ADDRESS) or all on this machine; give every call the same EXECUTOR and RAY_ADDRESS"
        )
    assert suite.build_dir is not None  # (the first block's -B)
    return suite_status(
        run_suite(
            suite,
            make_spec,
            events,
            args.time_limit,
            suite.build_dir,
            json_summary=Path(args.json_summary).resolve() if args.json_summary else None,
            jobs=args.suite_jobs,
            gpus=args.gpus,
            on_ray=bool(on_ray),
            ray_address=next(iter(on_ray), None),
        ),
        events,
    )


def suite_status(outcomes, events: EventStream) -> int:
    """A suite's exit status: 1 when a target failed, or when no target was tuned at all (every one skipped
    or failed: nothing was measured to a decision); 0 otherwise ("no gain" is a decision, and "unchanged" an
    earlier one that still holds)."""
    failed = [o.target for o in outcomes if o.status == "failed"]
    decided = [o for o in outcomes if o.status in ("tuned", "unchanged", "no gain")]
    if failed:
        events.warning(f"suite: {plural(len(failed), 'target')} failed ({', '.join(failed)}): exit status 1")
        return 1
    if not decided and any(o.status != "excluded" for o in outcomes):
        events.warning("suite: no target was tuned (each was skipped or failed): exit status 1")
        return 1
    return 0
