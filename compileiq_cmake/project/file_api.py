"""A small model of the CMake File API (codemodel v2, toolchains v1): targets, their sources, compile
languages and artifacts, and the compilers of a configured build tree."""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.errors import CompileIQError, UsageError

CLIENT = "client-compileiq"


@dataclass(frozen=True)
class Toolchain:
    language: str
    compiler_id: str
    version: str
    path: str


@dataclass(frozen=True)
class Target:
    name: str
    type: str
    languages: tuple[str, ...]
    sources: tuple[Path, ...]  # absolute paths of compiled sources
    artifacts: tuple[Path, ...]  # absolute paths
    dependencies: tuple[str, ...]  # names of targets it depends on
    source_languages: tuple[str, ...] = ()  # the compile language of each of `sources` (CMake's, not the suffix's)

    def sources_in(self, language: str) -> tuple[Path, ...]:
        """The compiled sources whose compile group has `language`: a .cpp marked LANGUAGE CUDA is CUDA."""
        return tuple(p for p, lang in zip(self.sources, self.source_languages, strict=False) if lang == language)

    @property
    def primary_language(self) -> str:
        for lang in ("CUDA", "CXX", "C"):
            if lang in self.languages:
                return lang
        return self.languages[0] if self.languages else ""


@dataclass(frozen=True)
class CodeModel:
    build_dir: Path
    source_dir: Path
    targets: dict[str, Target]
    toolchains: dict[str, Toolchain]

    def target(self, name: str) -> Target:
        if name not in self.targets:
            buildable = sorted(n for n, t in self.targets.items() if t.type != "UTILITY")
            close = difflib.get_close_matches(name, buildable, 1)
            shown = ", ".join(buildable[:20]) + (f" and {len(buildable) - 20} more" if len(buildable) > 20 else "")
            raise UsageError(
                f"unknown target '{name}'"
                + (f" (did you mean '{close[0]}'?)" if close else "")
                + f"; the project defines: {shown or 'no targets'}"
            )
        return self.targets[name]

    def target_owning(self, path: Path) -> Target | None:
        resolved = path.resolve()
        for t in self.targets.values():
            if resolved in t.artifacts:
                return t
        return None


def write_query(build_dir: Path) -> None:
    query = build_dir / ".cmake" / "api" / "v1" / "query" / CLIENT / "query.json"
    query.parent.mkdir(parents=True, exist_ok=True)
    query.write_text(
        json.dumps({"requests": [{"kind": "codemodel", "version": 2}, {"kind": "toolchains", "version": 1}]})
    )


def _load(reply_dir: Path, name: str) -> dict[str, Any]:
    """One reply file; missing or not JSON (a configure interrupted while writing, a reply dir edited by
    hand): one line saying which file and how to get a fresh reply."""
    try:
        reply: dict[str, Any] = json.loads((reply_dir / name).read_text())
        return reply
    except (OSError, ValueError) as err:
        raise CompileIQError(
            f"the CMake File API reply {reply_dir / name} cannot be read ({type(err).__name__}); "
            "configure the build directory again for a fresh reply"
        ) from None


def read_codemodel(build_dir: Path) -> CodeModel:
    reply_dir = build_dir / ".cmake" / "api" / "v1" / "reply"
    indexes = sorted(reply_dir.glob("index-*.json"))
    if not indexes:
        raise CompileIQError(f"{build_dir} has no CMake File API reply; the configure step did not finish")
    index = _load(reply_dir, indexes[-1].name)
    responses = index["reply"].get(CLIENT, {}).get("query.json", {}).get("responses", [])
    codemodel_ref = next((r for r in responses if r.get("kind") == "codemodel"), None)
    toolchains_ref = next((r for r in responses if r.get("kind") == "toolchains"), None)
    if codemodel_ref is None:
        raise CompileIQError(f"{build_dir}: CMake gave no codemodel reply (CMake >= 3.14 is needed)")
    codemodel = _load(reply_dir, codemodel_ref["jsonFile"])
    source_dir = Path(codemodel["paths"]["source"])
    top_build = Path(codemodel["paths"]["build"])
    configuration = codemodel["configurations"][0]
    id_to_name = {t["id"]: t["name"] for t in configuration["targets"]}
    targets: dict[str, Target] = {}
    for ref in configuration["targets"]:
        data = _load(reply_dir, ref["jsonFile"])
        groups = data.get("compileGroups", [])
        languages = tuple(dict.fromkeys(g["language"] for g in groups))
        language_of = {i: g["language"] for g in groups for i in g.get("sourceIndexes", [])}
        compiled = [i for i, _ in enumerate(data.get("sources", [])) if i in language_of]
        raw_sources = data.get("sources", [])
        sources = tuple(
            (source_dir / raw_sources[i]["path"]).resolve()
            if not Path(raw_sources[i]["path"]).is_absolute()
            else Path(raw_sources[i]["path"])
            for i in compiled
        )
        artifacts = tuple(
            (top_build / a["path"]).resolve() if not Path(a["path"]).is_absolute() else Path(a["path"])
            for a in data.get("artifacts", [])
        )
        deps = tuple(id_to_name.get(d["id"], "") for d in data.get("dependencies", []))
        targets[data["name"]] = Target(
            name=data["name"],
            type=data["type"],
            languages=languages,
            sources=sources,
            artifacts=artifacts,
            dependencies=deps,
            source_languages=tuple(language_of[i] for i in compiled),
        )
    toolchains: dict[str, Toolchain] = {}
    if toolchains_ref is not None:
        for tc in _load(reply_dir, toolchains_ref["jsonFile"]).get("toolchains", []):
            comp = tc.get("compiler", {})
            compiler_id, version = comp.get("id", ""), comp.get("version", "")
            if not compiler_id or not version:  # a language enabled in a subdirectory: CMake's own record has it
                compiler_id, version = _compiler_record(top_build, tc["language"], compiler_id, version)
            toolchains[tc["language"]] = Toolchain(
                language=tc["language"],
                compiler_id=compiler_id,
                version=version,
                path=comp.get("path", ""),
            )
    return CodeModel(build_dir=top_build, source_dir=source_dir, targets=targets, toolchains=toolchains)


_RECORD_LINE = re.compile(r'^set\(CMAKE_(\w+)_COMPILER_(ID|VERSION) "([^"]*)"\)', re.M)


def _compiler_record(build_dir: Path, language: str, compiler_id: str, version: str) -> tuple[str, str]:
    """The compiler CMake decided for `language` as it recorded it (CMakeFiles/<cmake version>/
    CMake<LANG>Compiler.cmake): the File API's toolchains reply leaves the id and version out for a language
    that `enable_language()` turned on in a subdirectory (CMake 3.25, 4.x), and a large library does that. The
    newest record wins; what the reply had is kept."""
    records = sorted(
        (build_dir / "CMakeFiles").glob(f"*/CMake{language}Compiler.cmake"), key=lambda p: p.stat().st_mtime
    )
    if not records:
        return compiler_id, version
    found = {
        (lang, key): value
        for lang, key, value in _RECORD_LINE.findall(records[-1].read_text(errors="replace"))
        if lang == language
    }
    return compiler_id or found.get((language, "ID"), ""), version or found.get((language, "VERSION"), "")
