"""The package's layers, read from its source with `ast`: a module imports only its own package or a lower
one (model, system, project, flags, measure, search, execute, decide, results, tune, ui), the modules import
each other without a cycle, and no function imports one of the package's own modules (every dependency is
visible at the top of its module)."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from compileiq_cmake.tune.tune_setup import TuneSetup

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


# The one exemption: the command line's dispatch imports a command's modules when that command runs, so that
# `cmake-entries` (run by every configure of a project with a flags file) and each tune process do not import
# every other command's (ui.cli: 459 -> 98 ms of imports); those imports are still held to the layers above.
LAZY_DISPATCH = (f"{PACKAGE}.ui.cli",)


def test_no_function_imports_a_module_of_the_package():
    local = [
        f"{MODULES[m].relative_to(ROOT.parent)}:{line} imports {t} inside a function"
        for m in MODULES
        if m not in LAZY_DISPATCH
        for line, t in _imports(m)[1]
    ]
    assert not local, "\n".join(local)
    assert _imports(LAZY_DISPATCH[0])[1], "ui.cli imports nothing when a command runs: drop the exemption"


def test_the_command_line_starts_without_the_tuner():
    """Importing the command line, which every command pays before it runs (`cmake-entries` at every configure
    with a flags file among them), loads neither the tuner, the check's re-measuring, the report's plots nor
    numpy."""
    import subprocess
    import sys

    code = (
        "import sys; import compileiq_cmake.ui.cli; "
        "print(sorted(m for m in sys.modules if m.startswith(('numpy', 'matplotlib', 'nevergrad', 'scipy', "
        "'compileiq_cmake.tune', 'compileiq_cmake.results.check_remeasure', 'compileiq_cmake.results.report')) "
        "or m == 'compileiq_cmake.results.check'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


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


# --- sizes (issue 53): a module <= 450 lines, a function <= 80 (argparse tables aside) ----------------------------

MAX_MODULE_LINES = 450
MAX_FUNCTION_LINES = 80
# Modules over the limit, each capped at its line count when this test came (it may shrink, never grow):
MODULES_OVER: dict[str, int] = {}
# Functions over the limit (module path, qualified name), capped likewise; the argparse tables need no entry.
FUNCTIONS_OVER: dict[tuple[str, str], int] = {}
# the calls that build an argparse parser: a function made only of them is a table of options, exempt
_PARSER_CALLS = {
    "ArgumentParser",
    "add_argument",
    "add_argument_group",
    "add_mutually_exclusive_group",
    "add_parser",
    "add_subparsers",
    "set_defaults",
}


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function of a module with its qualified name (Class.method, outer.inner)."""
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out.append((prefix + node.name, node))
            out.extend(_functions(node, f"{prefix}{node.name}."))
        elif isinstance(node, ast.ClassDef):
            out.extend(_functions(node, f"{prefix}{node.name}."))
        else:
            out.extend(_functions(node, prefix))
    return out


def _callee(call: ast.expr) -> str:
    if not isinstance(call, ast.Call):
        return ""
    return call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", "")


def _argparse_table(node: ast.FunctionDef | ast.AsyncFunctionDef, tables: set[str]) -> bool:
    """Whether a function only builds an ArgumentParser: each statement (its docstring aside) a call of argparse's
    builders (or of a parser class, or of another such table), a name bound to one, or a return of a name."""
    body = node.body[1:] if ast.get_docstring(node) is not None else node.body
    for st in body:
        if isinstance(st, ast.Return) and isinstance(st.value, ast.Name):
            continue
        value = st.value if isinstance(st, (ast.Expr, ast.Assign)) else None
        name = _callee(value) if value is not None else ""
        if not (name in _PARSER_CALLS or name.endswith("Parser") or name in tables):
            return False
    return bool(body)


def _sizes() -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """Each module's lines and each function's (the argparse tables left out), by path under the package."""
    modules, functions = {}, {}
    found: dict[str, list] = {}
    for path in MODULES.values():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text()
        modules[rel] = len(text.splitlines())
        found[rel] = _functions(ast.parse(text))
    tables: set[str] = set()
    while True:  # a table may call another table, also one imported from another module (by its name)
        more = {
            name
            for nodes in found.values()
            for name, node in nodes
            if name not in tables and _argparse_table(node, tables)
        }
        if not more:
            break
        tables |= more
    for rel, nodes in found.items():
        for name, node in nodes:
            if name not in tables:
                functions[(rel, name)] = node.end_lineno - node.lineno + 1
    return modules, functions


def test_no_module_is_over_450_lines_but_the_capped_ones():
    modules, _ = _sizes()
    over = [
        f"compileiq_cmake/{rel}: {n} lines (limit {MODULES_OVER.get(rel, MAX_MODULE_LINES)})"
        for rel, n in sorted(modules.items())
        if n > MODULES_OVER.get(rel, MAX_MODULE_LINES)
    ]
    assert not over, "split the module along its concerns:\n" + "\n".join(over)
    within = [rel for rel in MODULES_OVER if modules.get(rel, 0) <= MAX_MODULE_LINES]
    assert not within, f"capped modules now within the limit (or gone): take them off MODULES_OVER: {within}"


def test_no_function_is_over_80_lines_but_the_capped_ones_and_the_argparse_tables():
    _, functions = _sizes()
    over = [
        f"compileiq_cmake/{rel}: {name}: {n} lines (limit {FUNCTIONS_OVER.get((rel, name), MAX_FUNCTION_LINES)})"
        for (rel, name), n in sorted(functions.items())
        if n > FUNCTIONS_OVER.get((rel, name), MAX_FUNCTION_LINES)
    ]
    assert not over, "split the function:\n" + "\n".join(over)
    within = [key for key in FUNCTIONS_OVER if functions.get(key, 0) <= MAX_FUNCTION_LINES]
    assert not within, f"capped functions now within the limit (or gone): take them off FUNCTIONS_OVER: {within}"


def test_the_tune_setup_has_at_most_15_fields():
    """Issue 53: TuneSetup is made of typed parts (ProjectModel, Devices, CodeIdentity, DeviceCode, Tools, ...), not
    a growing list of loose fields."""
    names = [f.name for f in dataclasses.fields(TuneSetup)]
    assert len(names) <= 15, f"TuneSetup has {len(names)} fields; group them into its typed parts: {names}"


def test_the_argparse_tables_are_found_and_a_long_function_is_caught(tmp_path, monkeypatch):
    """The checker itself: the parser's tables are exempt (and only they), and a made-up long module with a long
    function is caught."""
    _, functions = _sizes()
    assert ("ui/parser.py", "build_parser") not in functions and ("ui/tune_options.py", "add_tune") not in functions
    assert ("ui/parser.py", "_spec_from_args") in functions
    fake = ROOT / "model" / "too_long.py"
    body = "def f():\n" + "    x = 1\n" * 90 + "    return x\n" + "\n" * 400
    monkeypatch.setitem(MODULES, f"{PACKAGE}.model.too_long", fake)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: body if self == fake else _READ(self, *a, **k))
    modules, functions = _sizes()
    assert modules["model/too_long.py"] > MAX_MODULE_LINES and functions[("model/too_long.py", "f")] == 92


_READ = Path.read_text
