"""The layers of docs/architecture.md, kept by reading the code: every import of a project module, at the
top of a module and inside functions, goes to the same layer or a lower one; no two modules import each
other, however indirectly; an import inside a function says why; hooks are connected in one place.

Each failure names the file and line, so the fix starts where the rule was broken.
"""

from __future__ import annotations

import ast
from collections import defaultdict

from tests.architecture.imports import ROOT, Import, imports, project_modules
from tests.architecture.layers import LAYERS, area_of, layer_of, rank

# Circles allowed inside one area, each with the reason docs/architecture.md gives. None today.
ALLOWED_CYCLES: dict[frozenset[str], str] = {}


def _where(found: Import) -> str:
    source, target = found.source, found.target
    return f"{found.path}:{found.line} {source} ({layer_of(source)}) imports {target} ({layer_of(target)})"


def test_every_module_has_a_layer() -> None:
    modules = project_modules()
    assert len(modules) > 150  # the check reads the whole project
    for module in modules:
        assert layer_of(module) in LAYERS


def test_no_module_imports_a_higher_layer_or_a_sibling_area() -> None:
    upward = []
    for found in imports():
        source, target = rank(found.source), rank(found.target)
        sibling = (
            source == target
            and area_of(found.source) != area_of(found.target)
            and layer_of(found.source) != "area pages"  # pages may show what several areas hold
        )
        if target > source or sibling:
            upward.append(_where(found))
    assert sorted(set(upward)) == []


def _cycles(edges: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


def test_no_two_modules_import_each_other() -> None:
    edges: dict[str, set[str]] = defaultdict(set)
    where: dict[tuple[str, str], str] = {}
    for found in imports():
        edges[found.source].add(found.target)
        where.setdefault((found.source, found.target), f"{found.path}:{found.line}")
    unexplained = []
    for cycle in _cycles(edges):
        if cycle in ALLOWED_CYCLES:
            continue
        links = sorted(where[(a, b)] + f" {a} -> {b}" for a in cycle for b in edges[a] if b in cycle)
        unexplained.append(links)
    assert unexplained == []


def test_an_import_inside_a_function_says_why() -> None:
    """Late imports only with a reason written next to them (a heavy library, an area's wiring), never
    silently to dodge a circle: the circle is what the layers forbid."""
    silent = sorted({f"{f.path}:{f.line} {f.target}" for f in imports() if f.in_function and not f.commented})
    assert silent == []


def _hook_names() -> set[str]:
    names = set()
    for path in sorted([*(ROOT / "core").rglob("*.py"), *(ROOT / "blueprints").rglob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Call)
                and isinstance(node.value.func, ast.Name)
                and node.value.func.id == "hook"
            ):
                names |= {target.id for target in node.targets if isinstance(target, ast.Name)}
    return names


def test_hooks_are_connected_in_integrations_only() -> None:
    hooks = _hook_names()
    assert len(hooks) > 10
    elsewhere = []
    for path in sorted((ROOT / "blueprints").rglob("*.py")):
        if path.is_relative_to(ROOT / "blueprints" / "integrations"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
                continue
            if node.func.attr != "connect":
                continue
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", None)
            if name in hooks:
                elsewhere.append(f"{path.relative_to(ROOT)}:{node.lineno} {name}.connect")
    assert elsewhere == []
