"""The API reference pages, written from the public modules' ``__all__`` at build time.

Every name of every module in :data:`MODULES` is listed on that module's page. An object
exported by several modules (``pseudopost.PseudoPosterior`` is
``pseudopost.mechanisms.pseudo_posterior.PseudoPosterior``) is documented once, on the page of
the module that defines it (the deepest listed module its ``__module__`` lies in), and linked
from the others; cross-references to any of its public names, or to the private module that
defines it, resolve to that one entry (:func:`resolve_alias`).
"""

from __future__ import annotations

import importlib
import inspect
import re
import types
from pathlib import Path
from typing import Any

__all__ = ["MODULES", "aliases", "documented", "setup", "write_pages"]

#: the public modules, in the order of the reference; each gets a page
MODULES = [
    "pseudopost",
    "pseudopost.synthesis",
    "pseudopost.datasets",
    "pseudopost.formats",
    "pseudopost.models",
    "pseudopost.models.families",
    "pseudopost.models.registry",
    "pseudopost.models.rules",
    "pseudopost.models.parts",
    "pseudopost.models.file",
    "pseudopost.models.file.categories",
    "pseudopost.models.file.derived",
    "pseudopost.models.file.nesting",
    "pseudopost.fitting",
    "pseudopost.risk",
    "pseudopost.privacy",
    "pseudopost.privacy.noise",
    "pseudopost.mechanisms",
    "pseudopost.mechanisms.pseudo_posterior",
    "pseudopost.mechanisms.pseudo_posterior.dask",
    "pseudopost.mechanisms.reps",
    "pseudopost.mechanisms.prism",
    "pseudopost.mechanisms.entropy",
    "pseudopost.mechanisms.wiener",
    "pseudopost.mechanisms.privacy_testing",
    "pseudopost.mechanisms.structure",
    "pseudopost.evaluate",
    "pseudopost.evaluate.combine",
    "pseudopost.release",
    "pseudopost.release.adapters",
    "pseudopost.release.spec",
    "pseudopost.release.schema",
    "pseudopost.release.measures",
    "pseudopost.release.verdicts",
    "pseudopost.checks",
]

_KINDS = ("Classes", "Exceptions and warnings", "Functions", "Data")


def _kind(obj: Any) -> str:
    if inspect.isclass(obj):
        return "Exceptions and warnings" if issubclass(obj, BaseException) else "Classes"
    if callable(obj) and not isinstance(obj, types.GenericAlias):
        return "Functions"
    return "Data"


def _key(obj: Any) -> int:
    return id(obj)


def _public(module: str) -> list[tuple[str, Any]]:
    mod = importlib.import_module(module)
    return [(name, getattr(mod, name)) for name in mod.__all__]


def documented() -> dict[int, str]:
    """Object id -> the full name it is documented under (modules excluded)."""
    exporters: dict[int, list[tuple[str, str]]] = {}
    for module in MODULES:
        for name, obj in _public(module):
            if not inspect.ismodule(obj):
                exporters.setdefault(_key(obj), []).append((module, name))
    where: dict[int, str] = {}
    for key, places in exporters.items():
        obj_module = _object_module(places)
        inside = [p for p in places if obj_module and f"{obj_module}.".startswith(f"{p[0]}.")]
        # defined inside a listed module: the deepest such; else (data) the deepest exporter
        best = max(inside or places, key=lambda p: p[0].count("."))
        where[key] = f"{best[0]}.{best[1]}"
    return where


def _object_module(places: list[tuple[str, str]]) -> str | None:
    module, name = places[0]
    obj = getattr(importlib.import_module(module), name)
    found = getattr(obj, "__module__", None)
    return found if isinstance(found, str) and (inspect.isclass(obj) or callable(obj)) else None


def aliases() -> dict[str, str]:
    """Every other public (or defining) name of a documented object -> its documented name."""
    where = documented()
    out: dict[str, str] = {}
    for module in MODULES:
        for name, obj in _public(module):
            if inspect.ismodule(obj):
                continue
            target = where[_key(obj)]
            if f"{module}.{name}" != target:
                out[f"{module}.{name}"] = target
            qualname = getattr(obj, "__qualname__", None)
            defined = getattr(obj, "__module__", None)
            if isinstance(qualname, str) and isinstance(defined, str):
                if f"{defined}.{qualname}" != target:
                    out.setdefault(f"{defined}.{qualname}", target)
    return out


_ROLE = re.compile(r":[a-z]+:`~?\.?([^`<]*?)(?:\s*<[^>]*>)?`")


def _summary(module: str) -> str:
    """The first sentence of a module's docstring, its roles as literals (no cross-references
    out of their context)."""
    doc = inspect.getdoc(importlib.import_module(module)) or ""
    first = " ".join(doc.split("\n\n")[0].split())
    first = re.split(r"(?<!Fig)\. ", first)[0].rstrip(".") + "."
    return _ROLE.sub(r"``\1``", first)


def _module_list(modules: list[str]) -> list[str]:
    return [f"* :mod:`{module}`: {_summary(module)}" for module in modules] + [""]


def _title(text: str, char: str = "=") -> list[str]:
    return [text, char * len(text), ""]


def _page(module: str, where: dict[int, str]) -> str:
    lines = [*_title(f"``{module}``"), f".. automodule:: {module}", "   :no-members:", ""]
    lines += [f".. currentmodule:: {module}", ""]
    groups: dict[str, list[str]] = {kind: [] for kind in _KINDS}
    submodules, elsewhere = [], []
    for name, obj in _public(module):
        if inspect.ismodule(obj):
            submodules.append(obj.__name__)
        elif where[_key(obj)] == f"{module}.{name}":
            groups[_kind(obj)].append(name)
        else:
            elsewhere.append((name, where[_key(obj)], obj))
    for kind, names in groups.items():
        if names:
            lines += [*_title(kind, "-"), ".. autosummary::", "   :toctree: generated/", ""]
            lines += [f"   {name}" for name in names] + [""]
    if elsewhere:
        lines += [*_title("Also exported here", "-")]
        lines += ["Documented where they are defined:", ""]
        for name, target, obj in elsewhere:
            role = {"Functions": "func", "Data": "data"}.get(_kind(obj), "class")
            lines.append(f"* ``{name}``: :{role}:`{target}`")
        lines.append("")
    if submodules:
        lines += [*_title("Modules", "-")]
        lines += _module_list([name for name in submodules if name in MODULES])
    return "\n".join(lines)


def write_pages(srcdir: str | Path) -> list[Path]:
    """Write ``api/index.rst`` and one page per module of :data:`MODULES`; only changed files
    are rewritten (so an unchanged reference is not re-read)."""
    folder = Path(srcdir) / "api"
    folder.mkdir(exist_ok=True)
    where = documented()
    pages = {f"{module}.rst": _page(module, where) for module in MODULES}
    index = [
        *_title("API reference"),
        "Generated from the docstrings. Every public name (each module's ``__all__``) is on",
        "its module's page; a name exported by several modules is documented where it is",
        "defined and linked from the others.",
        "",
        *_module_list(MODULES),
        ".. toctree::",
        "   :hidden:",
        "",
        *[f"   {module}" for module in MODULES],
        "",
    ]
    pages["index.rst"] = "\n".join(index)
    stubs = folder / "generated"
    if stubs.is_dir():  # stubs of names no longer documented (autosummary keeps them)
        for stub in stubs.glob("*.rst"):
            if stub.stem not in where.values() and "." in stub.stem:
                stub.unlink()
    written = []
    for name, text in pages.items():
        path = folder / name
        if not path.exists() or path.read_text(encoding="utf-8") != text:
            path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def _find(dotted: str) -> Any:
    """The object a dotted name names (a module, then attributes), or ``None``."""
    if not dotted.startswith("pseudopost"):
        return None
    parts = dotted.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj: Any = importlib.import_module(".".join(parts[:i]))
        except Exception:  # not a module (ImportError), or not a name at all
            continue
        try:
            for attr in parts[i:]:
                obj = getattr(obj, attr)
        except AttributeError:
            return None
        return obj
    return None


class _Aliases:
    """Dotted names -> the documented name of the same object (see :func:`resolve_alias`)."""

    def __init__(self) -> None:
        self.table = aliases()
        self.where = documented()

    def canonical(self, head: str) -> str | None:
        if head in self.table:
            return self.table[head]
        if not head.startswith("pseudopost."):
            return None
        obj = _find(head)  # the name in a module's namespace (an import of a public object)
        if obj is None or inspect.ismodule(obj):
            return None
        return self.where.get(_key(obj))


def resolve_alias(app, env, node, contnode):
    """``missing-reference``: a reference to another name of a documented object (another public
    name, the private module defining it, a module's imported name), or to a member of one,
    resolves to its entry."""
    if node.get("refdomain") != "py":
        return None
    table: _Aliases = app._pseudopost_aliases
    target = node["reftarget"].lstrip(".~")
    candidates = [target]
    for context in (node.get("py:class"), node.get("py:module")):
        if context:
            candidates.append(f"{context}.{target}")
    if node.get("py:class") and node.get("py:module"):
        candidates.append(f"{node['py:module']}.{node['py:class']}.{target}")
    documented_here = _find(node["refdoc"].rpartition("/")[2])  # an API stub's object
    defined_in = getattr(documented_here, "__module__", None)
    if isinstance(defined_in, str):  # a name as the docstring's own module sees it
        candidates.append(f"{defined_in}.{target}")
    domain = env.get_domain("py")
    for candidate in candidates:
        parts = candidate.split(".")
        for i in range(len(parts), 0, -1):
            new = table.canonical(".".join(parts[:i]))
            if new is None:
                continue
            new = ".".join([new, *parts[i:]])
            found = domain.resolve_any_xref(env, node["refdoc"], app.builder, new, node, contnode)
            if found:
                return found[0][1]
    return None


def setup(app):
    write_pages(app.srcdir)
    app._pseudopost_aliases = _Aliases()
    app.connect("missing-reference", resolve_alias)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
