"""The layers of the project, lowest first (docs/architecture.md, "Layers"): a module may import its own
layer's modules and any lower layer's, never a higher one's, nor a sibling area of its own layer."""

from __future__ import annotations

# Each layer: its name and the areas (packages under blueprints/, or core) in it, lowest first. Areas in
# one layer are siblings: none imports another.
DOMAIN_LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core", ("core",)),
    ("audit", ("audit",)),
    ("organizations", ("organizations",)),
    ("channels", ("channels",)),
    ("messaging", ("messaging",)),
    ("members", ("members",)),
    ("work", ("inbox", "crm", "telecom")),
    ("automation", ("ai", "notifications")),
    ("voice", ("voice",)),
)
# The desk's pages sit above every domain layer: the kit any area's pages use (blueprints/desk), the
# areas' pages, and the shell that frames them (blueprints/shell).
PAGE_MODULES = ("pages", "views")  # blueprints/<area>/pages.py, views.py (or packages of those names)
PAGE_LAYERS = ("desk kit", "area pages", "desk shell")
# An area package's ``__init__`` (its init_app: registers the API and pages, connects nothing) is read by
# app.py alone, after everything: the top layer.
WIRING = "area wiring"
# Integrations connects every area's answers to the hooks that ask, the desk's Socket.IO authentication
# included: it sits above the shell, below the areas' wiring.
INTEGRATIONS = "integrations"
LAYERS = (*[name for name, _ in DOMAIN_LAYERS], *PAGE_LAYERS, INTEGRATIONS, WIRING)


def area_of(module: str) -> str:
    parts = module.split(".")
    return "core" if parts[0] == "core" else parts[1] if len(parts) > 1 else "blueprints"


def layer_of(module: str) -> str:
    parts = module.split(".")
    area = area_of(module)
    if parts[0] == "blueprints" and len(parts) <= 2:
        return WIRING
    if area == "desk":
        return "desk kit"
    if area == "shell":
        return "desk shell"
    if area == "integrations":
        return INTEGRATIONS
    if parts[0] == "blueprints" and len(parts) > 2 and parts[2] in PAGE_MODULES:
        return "area pages"
    for name, areas in DOMAIN_LAYERS:
        if area in areas:
            return name
    raise LookupError(f"{module}: its area {area!r} has no layer in tests/architecture/layers.py")


def rank(module: str) -> int:
    return LAYERS.index(layer_of(module))
