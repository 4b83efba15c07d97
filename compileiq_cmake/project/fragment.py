"""The trial fragment a variant tree's configure includes (COMPILEIQ_VARIANT_FRAGMENT): a flag set rendered
from templates/variant_flags.cmake.j2; and `cmake_quote`, the one quoting of CMake string values the tool
writes (the fragment, the initial cache script, `cmake-entries`)."""

from __future__ import annotations

import jinja2

from ..model import build_flags
from ..system.resources import templates_dir

FRAGMENT_NAME = "compileiq_trial_flags.cmake"


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
