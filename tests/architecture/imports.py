"""The project's own import graph, read from the source (no module is imported): every ``import`` and
``from … import`` of ``core`` and ``blueprints`` modules, at the top of a module and inside functions."""

from __future__ import annotations

import ast
import io
import tokenize
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("core", "blueprints")


@dataclass(frozen=True)
class Import:
    source: str  # the importing module, dotted
    target: str  # the imported module, dotted (a name imported from a package resolved to its module)
    path: str  # the importing file, relative to the project
    line: int
    in_function: bool
    commented: bool  # inside a function: a comment between the function's first line and the import's


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def project_modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The project module ``name`` is, or the closest package it lives in (``a.b.func`` -> ``a.b``)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def _nodes_under(tree: ast.AST, kinds: tuple[type[ast.AST], ...], test: object = None) -> set[int]:
    under: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, kinds) and (test is None or test(node)):  # type: ignore[operator]
            for child in ast.walk(node):
                if child is not node:
                    under.add(id(child))
    return under


def _enclosing_function_starts(tree: ast.AST) -> dict[int, int]:
    """For each node inside a function: the first line of the innermost function around it."""
    starts: dict[int, int] = {}

    def visit(node: ast.AST, start: int | None) -> None:
        for child in ast.iter_child_nodes(node):
            if start is not None:
                starts[id(child)] = start
            inner = child.lineno if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef) else start
            visit(child, inner)

    visit(tree, None)
    return starts


def _comment_lines(text: str) -> set[int]:
    return {
        token.start[0]
        for token in tokenize.generate_tokens(io.StringIO(text).readline)
        if token.type == tokenize.COMMENT
    }


def _is_type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports() -> list[Import]:
    modules = project_modules()
    found: list[Import] = []
    for source, path in modules.items():
        text = path.read_text()
        tree = ast.parse(text, filename=str(path))
        inside = _nodes_under(tree, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        starts = _enclosing_function_starts(tree)
        comments = _comment_lines(text)
        # ``if TYPE_CHECKING:`` imports are read by type checkers only: no import at run time
        typing_only = _nodes_under(tree, (ast.If,), _is_type_checking)
        package = source if path.name == "__init__.py" else source.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` imports mod
                targets = [f"{base}.{alias.name}" for alias in node.names]
            else:
                continue
            if id(node) in typing_only:
                continue
            for target in targets:
                if target.split(".")[0] not in PACKAGES:
                    continue
                resolved = _resolve(target, modules)
                if resolved is None or resolved == source:
                    continue
                line = node.lineno
                first = starts.get(id(node), line)
                commented = any(first <= number <= node.end_lineno for number in comments)  # type: ignore[operator]
                found.append(
                    Import(source, resolved, str(path.relative_to(ROOT)), line, id(node) in inside, commented)
                )
    return found
