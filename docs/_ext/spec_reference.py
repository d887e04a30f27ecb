"""The TOML spec reference, generated from the release adapters' option definitions.

:func:`spec_rows` reads :data:`pseudopost.release.ADAPTERS` (each adapter's ``sections``,
``release_keys`` and ``budget_keys``: key -> (required, kind)) and the common sections of
:mod:`pseudopost.release.spec`; :func:`render` turns the rows into one reStructuredText table per
mechanism. The ``spec-reference`` directive inserts them in a page at build time, so the page
cannot drift from the code. Descriptions are taken, where present, from the ``key = value  #
comment`` lines of the spec layouts in the adapters' module docstrings.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["Row", "render", "setup", "spec_rows"]

_SECTION = re.compile(r"^\s*\[([A-Za-z0-9_.]+)\]\s*(?:#\s?(.*))?$")
_KEY = re.compile(r"^\s*([A-Za-z0-9_]+)\s*=\s*.*?(?:\s#\s?(.*))?$")
_COMMENT = re.compile(r"^\s{8,}#\s?(.*)$")


@dataclass(frozen=True)
class Row:
    """One key of one section of a mechanism's spec."""

    section: str
    key: str
    required: bool
    kind: str
    expected: str
    description: str


def _expected(kind: Any) -> tuple[str, str]:
    from pseudopost.release.schema import EXPECTED

    if isinstance(kind, str):
        return kind, EXPECTED[kind]
    expected = getattr(kind, "expected", "")
    if not expected:
        raise ValueError(f"spec kind {kind!r} has no 'expected' text")
    return "custom", str(expected)


def _comments(text: str | None) -> dict[tuple[str, str], str]:
    """``(section, key) -> comment`` from the TOML layouts (literal blocks) of one docstring."""
    found: dict[tuple[str, str], str] = {}
    section, last = None, None
    for line in (text or "").splitlines():
        if m := _SECTION.match(line):
            section, last = m.group(1), None
        elif section is None:
            continue
        elif (m := _COMMENT.match(line)) and last is not None and last in found:
            found[last] = f"{found[last]} {m.group(1).strip()}"  # a comment's next line
        elif (m := _KEY.match(line)) and not line.lstrip().startswith("#"):
            last = (section, m.group(1))
            if m.group(2):
                found[last] = m.group(2).strip()
        elif line.strip() and not line.startswith(" "):
            section, last = None, None  # the literal block ended
    return found


def _layout_comments(*texts: str | None) -> dict[tuple[str, str], str]:
    """:func:`_comments` of several docstrings; the first to describe a key wins."""
    merged: dict[tuple[str, str], str] = {}
    for text in texts:
        for where, note in _comments(text).items():
            merged.setdefault(where, note)
    return merged


def _docstrings(adapter: Any) -> list[str | None]:
    """The adapter's module docstring, the shared layout it points to, the common sections'."""
    module = importlib.import_module(type(adapter).__module__)
    texts = [module.__doc__]
    shared = "pseudopost.release.adapters.fully_synthetic"
    if shared in (module.__doc__ or ""):
        texts.append(importlib.import_module(shared).__doc__)
    texts.append(importlib.import_module("pseudopost.release.spec").__doc__)
    return texts


def _rows(schemas: Mapping[str, Mapping[str, tuple[bool, Any]]], notes) -> list[Row]:
    rows = []
    for section, keys in schemas.items():
        for key, (required, kind) in keys.items():
            name, expected = _expected(kind)
            note = notes.get((section, key), "")
            rows.append(Row(section, key, bool(required), name, expected, note))
    return rows


def spec_rows(adapters: Mapping[str, Any] | None = None) -> dict[str, list[Row]]:
    """Every key of every spec section: ``"common"`` (the sections every release reads) and
    one entry per mechanism of ``adapters`` (default :data:`pseudopost.release.ADAPTERS`),
    holding the adapter's own sections and the keys it adds to ``[release]`` and ``[budget]``.
    """
    from pseudopost.release import spec as spec_module

    if adapters is None:
        from pseudopost.release import ADAPTERS as adapters
    out = {"common": _rows(spec_module.COMMON, _layout_comments(spec_module.__doc__))}
    for name, adapter in adapters.items():
        notes = _layout_comments(*_docstrings(adapter))
        notes[("mechanism", "name")] = f'"{name}" picks this mechanism'
        schemas: dict[str, Mapping[str, tuple[bool, Any]]] = dict(adapter.sections)
        if adapter.release_keys:
            schemas["release"] = adapter.release_keys
        if adapter.budget_keys:
            schemas["budget"] = adapter.budget_keys
        out[name] = _rows(schemas, notes)
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*").replace("`", "'") or " "


def render(rows: Mapping[str, list[Row]] | None = None) -> str:
    """reStructuredText: a section per mechanism, one table of its keys."""
    rows = spec_rows() if rows is None else rows
    out: list[str] = []
    for name, table in rows.items():
        title = "Common sections" if name == "common" else f"``{name}``"
        out += [title, "-" * len(title), ""]
        if name == "common":
            out += ["Read for every mechanism; ``[mechanism] name`` picks one of those below.", ""]
        else:
            out += [f'``[mechanism] name = "{name}"``. Besides the common sections:', ""]
        out += [
            ".. list-table::",
            "   :header-rows: 1",
            "   :widths: 12 18 8 22 40",
            "",
            "   * - section",
            "     - key",
            "     - required",
            "     - expected",
            "     - description",
        ]
        for row in table:
            out += [
                f"   * - ``[{row.section}]``",
                f"     - ``{row.key}``",
                f"     - {'yes' if row.required else 'no'}",
                f"     - {_cell(row.expected)}",
                f"     - {_cell(row.description)}",
            ]
        out.append("")
    return "\n".join(out)


def setup(app):
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class SpecReference(SphinxDirective):
        """``.. spec-reference::`` inserts :func:`render`'s tables."""

        def run(self):
            container = nodes.section()
            container.document = self.state.document
            source = StringList(render().splitlines(), source="<spec-reference>")
            self.state.nested_parse(source, self.content_offset, container, match_titles=True)
            return container.children

    app.add_directive("spec-reference", SpecReference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
