"""The package's import graph: no circle between modules, no import from a lower layer up to a
higher one, no private name or private module used across rooms.

The graph is read from the source with ``ast`` (every ``import`` and ``from ... import``,
including those inside functions and ``TYPE_CHECKING`` blocks), so it is the graph a reader sees.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "pseudopost"

#: rooms from the bottom up; a module may import its own layer and the layers below it.
#: The data flow: models -> fitting -> privacy -> risk -> mechanisms -> synthesis -> evaluate
#: -> release. Risk and privacy import nothing of each other since REPS's rarity scorer,
#: weight maps and accounting moved into the mechanism; ``_deprecated`` (old paths forwarded by
#: name, importing nothing of the package) is a primitive every layer may use.
LAYERS: list[tuple[str, ...]] = [
    ("pseudopost._rng", "pseudopost._streams", "pseudopost._validation", "pseudopost._io",
     "pseudopost._extras", "pseudopost._cards", "pseudopost._deprecated"),
    ("pseudopost.datasets", "pseudopost.formats"),
    ("pseudopost.models",),
    ("pseudopost.fitting",),
    ("pseudopost.privacy",),
    ("pseudopost.risk",),
    ("pseudopost.mechanisms",),
    ("pseudopost.synthesis",),
    ("pseudopost.evaluate",),
    ("pseudopost.release",),
    ("pseudopost.cli", "pseudopost.checks"),
    ("pseudopost",),
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in sorted(ROOT.rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The package module a dotted name refers to (a module, or the module defining a name)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> list[tuple[str, str, int]]:
    """(imported module, imported name or '', line) for every import in ``module``."""
    tree = ast.parse(MODULES[module].read_text())
    is_pkg = MODULES[module].name == "__init__.py"
    package = module if is_pkg else module.rpartition(".")[0]
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("pseudopost"):
                    out.append((a.name, "", node.lineno))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                pkg = package.split(".")
                pkg = pkg[: len(pkg) - node.level + 1]
                base = ".".join([*pkg, base] if base else pkg)
            if not base.startswith("pseudopost"):
                continue
            for a in node.names:
                sub = f"{base}.{a.name}"
                out.append((sub if sub in MODULES else base, a.name, node.lineno))
    return out


def _edges() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for m in MODULES:
        for target, _, _ in _imports(m):
            t = _resolve(target)
            if t is not None and t != m:
                graph[m].add(t)
    return graph


def _layer(module: str) -> int:
    best, level = -1, None
    for i, room in enumerate(LAYERS):
        for prefix in room:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > best:
                best, level = len(prefix), i
    assert level is not None, f"{module} is in no layer of LAYERS"
    return level


def _room(module: str) -> str:
    """The top-level room of a module: 'pseudopost.models', 'pseudopost._rng', ..."""
    return ".".join(module.split(".")[:2])


def test_every_module_has_a_layer():
    assert MODULES, "no module of the package was found"
    unplaced = [m for m in MODULES if not 0 <= _layer(m) < len(LAYERS)]
    assert not unplaced, f"modules in no layer: {unplaced}"


def test_no_import_from_a_lower_layer_up():
    up = []
    for m, targets in _edges().items():
        for t in targets:
            if _layer(t) > _layer(m):
                up.append(f"{m} (layer {_layer(m)}) imports {t} (layer {_layer(t)})")
    assert not up, "imports that run back up:\n" + "\n".join(sorted(up))


def test_no_import_circle_between_modules():
    graph = _edges()
    index, low, stack, on, circles = {}, {}, [], set(), []
    counter = [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            # a package __init__ re-exporting its own modules is not a circle of files
            files = [c for c in comp if not (c in graph and _is_package_of(c, comp))]
            if len(files) > 1:
                circles.append(sorted(comp))

    for v in graph:
        if v not in index:
            visit(v)
    assert not circles, "import circles:\n" + "\n".join(" <-> ".join(c) for c in circles)


def _is_package_of(pkg: str, comp: list[str]) -> bool:
    return MODULES[pkg].name == "__init__.py" and all(
        c == pkg or c.startswith(pkg + ".") for c in comp
    )


def _package(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def test_no_private_helper_used_across_packages():
    """A private name (``_x``) or private module is used only inside its own package; the
    primitives ``pseudopost._rng``, ``_streams``, ``_validation``, ``_io``, ``_extras`` (optional
    dependencies) and ``_cards`` (notebook cards) are shared."""
    crossing = []
    for m in MODULES:
        for target, name, line in _imports(m):
            t = _resolve(target) or target
            if _package(t) == _package(m) or _layer(t) == 0:
                continue
            private_module = any(p.startswith("_") for p in t.split(".")[1:])
            private_name = name.startswith("_") and not name.startswith("__")
            if private_module or private_name:
                crossing.append(f"{m}:{line} imports {name or t} from {t}")
    assert not crossing, "private helpers used across packages:\n" + "\n".join(sorted(crossing))


@pytest.mark.parametrize(
    "sibling", ["pseudo_posterior", "reps", "prism", "entropy", "wiener", "privacy_testing"]
)
def test_mechanisms_do_not_import_each_other(sibling):
    prefix = f"pseudopost.mechanisms.{sibling}"
    others = []
    for m in MODULES:
        if not (m == prefix or m.startswith(prefix + ".")):
            continue
        for t in _edges()[m]:
            if t.startswith("pseudopost.mechanisms.") and not (
                t == prefix or t.startswith(prefix + ".")
            ):
                others.append(f"{m} imports {t}")
    assert not others, "\n".join(others)
