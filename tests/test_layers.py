"""The package's layers, read from its source with `ast`: a module imports only its own package or a lower
one (model, system, project, flags, measure, search, execute, decide, results, tune, ui), the modules import
each other without a cycle, and no function imports one of the package's own modules (every dependency is
visible at the top of its module)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[1] / "compileiq_cmake"
PACKAGE = "compileiq_cmake"
ORDER = ("model", "system", "project", "flags", "measure", "search", "execute", "decide", "results", "tune", "ui")


def _modules() -> dict[str, Path]:
    """Every module of the package by its dotted name (a package by its own name, for its __init__)."""
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _rank(module: str) -> int:
    """The layer of a module: the package root's __init__ (the version) is below every layer, __main__ above."""
    parts = module.split(".")
    if len(parts) == 1:
        return -1
    if parts[1] == "__main__":
        return len(ORDER)
    return ORDER.index(parts[1])


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's own modules an import statement of `module` names (empty for other libraries)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names if a.name == PACKAGE or a.name.startswith(PACKAGE + ".")]
    if node.level:
        here = module.split(".")
        if not MODULES[module].name == "__init__.py":
            here = here[:-1]  # a module's relative imports start at its package
        base = ".".join(here[: len(here) - node.level + 1] + ([node.module] if node.module else []))
    elif node.module and (node.module == PACKAGE or node.module.startswith(PACKAGE + ".")):
        base = node.module
    else:
        return []
    return list(dict.fromkeys(f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names))


def _imports(module: str) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(module-level imports, function-local imports) of the package's own modules: (line, module)."""
    tree = ast.parse(MODULES[module].read_text(), str(MODULES[module]))
    top, local = [], []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                (local if in_function else top).extend((child.lineno, t) for t in _targets(module, child))
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return top, local


def test_the_module_list_is_read():
    assert f"{PACKAGE}.tune.orchestration" in MODULES and f"{PACKAGE}.model.records" in MODULES
    assert all(_rank(m) < len(ORDER) for m in MODULES if not m.endswith("__main__"))


def test_no_module_imports_a_higher_package():
    upward = [
        f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {t} ({t.split('.')[1]} is above {m.split('.')[1]})"
        for m in MODULES
        for line, t in sum(_imports(m), [])
        if _rank(t) > _rank(m)
    ]
    assert not upward, "\n".join(upward)


def test_no_function_imports_a_module_of_the_package():
    local = [
        f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {t} inside a function"
        for m in MODULES
        for line, t in _imports(m)[1]
    ]
    assert not local, "\n".join(local)


def test_the_modules_import_each_other_without_a_cycle():
    graph = {m: sorted({t for _, t in sum(_imports(m), []) if t != m}) for m in MODULES}
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    cycles: list[str] = []

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for t in graph.get(module, ()):
            if state.get(t) == 1:
                cycles.append(" -> ".join(path[path.index(t) :] + [module, t]) if t in path else f"{module} -> {t}")
            elif t not in state:
                walk(t, path + [module])
        state[module] = 2

    for m in MODULES:
        if m not in state:
            walk(m, [])
    assert not cycles, "\n".join(cycles)


def test_the_checks_see_an_upward_and_a_local_import(tmp_path, monkeypatch):
    """The checker itself: a made-up module of `flags` that imports `tune` in a function is caught twice."""
    fake = tmp_path / "bad.py"
    fake.write_text("from ..model import errors\n\ndef f():\n    from ..tune import trial\n    return trial\n")
    monkeypatch.setitem(MODULES, f"{PACKAGE}.flags.bad", fake)
    top, local = _imports(f"{PACKAGE}.flags.bad")
    assert top == [(1, f"{PACKAGE}.model.errors")]
    assert local == [(4, f"{PACKAGE}.tune.trial")] and _rank(local[0][1]) > _rank(f"{PACKAGE}.flags.bad")


def test_the_decision_procedure_imports_neither_the_project_nor_the_measurement():
    """Issue 37: decide/ is the pure decision procedure; the trees and runners it is given are protocols
    (decide/ports.py) that the live runner, the simulator's and the tests' fakes fit."""
    decide = [m for m in MODULES if m.startswith(f"{PACKAGE}.decide")]
    assert len(decide) >= 4
    for module in decide:
        imported = [target for _, target in _imports(module)[0]]
        assert not [t for t in imported if t.startswith((f"{PACKAGE}.project", f"{PACKAGE}.measure"))], module
