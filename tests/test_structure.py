"""The house rules, checked: no import circles (imports inside functions included), no module
over 400 lines and no function over 60 under runner/ and hydra_plugins/."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import REPO

ROOTS = ("runner", "hydra_plugins")


def _modules() -> dict[str, Path]:
    out = {}
    for root in ROOTS:
        for path in (REPO / root).rglob("*.py"):
            parts = path.relative_to(REPO).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[name] = path
    return out


def _imports(path: Path, name: str, known: set[str]) -> set[str]:
    """The project modules `path` imports, anywhere in it (the package of a module counted
    when the module itself is not a module of the project)."""
    found = set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package.split(".")[:len(package.split(".")) - node.level + 1]
                                + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names] + [base]
        for target in targets:
            while target and target not in known:
                target = target.rpartition(".")[0]
            if target and target != name:
                found.add(target)
    return found


def _ancestors(name: str) -> set[str]:
    parts = name.split(".")
    return {".".join(parts[:i]) for i in range(1, len(parts))}


def test_no_import_circles() -> None:
    modules = _modules()
    known = set(modules)
    graph = {name: _imports(path, name, known) - _ancestors(name)
             for name, path in modules.items()}
    seen: dict[str, int] = {}  # 1 on the path, 2 done
    circles: list[list[str]] = []

    def visit(node: str, path: list[str]) -> None:
        seen[node] = 1
        for nxt in sorted(graph[node]):
            if seen.get(nxt) == 1:
                circles.append([*path[path.index(nxt):], nxt])
            elif nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[node] = 2

    for name in sorted(graph):
        if name not in seen:
            visit(name, [name])
    assert circles == []


def test_modules_and_functions_stay_small() -> None:
    too_long = []
    for name, path in _modules().items():
        source = path.read_text(encoding="utf-8")
        if len(source.splitlines()) > 400:
            too_long.append(f"{name}: {len(source.splitlines())} lines")
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > 60:
                    too_long.append(f"{name}.{node.name}: {length} lines")
    assert too_long == []
