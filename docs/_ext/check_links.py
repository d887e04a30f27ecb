"""Check that every local link of the built HTML resolves: ``python check_links.py HTML_DIR``.

Every ``href`` and ``src`` of every page that is not an external URL (``http:``, ``mailto:``,
...) must name an existing file under the output folder, and its ``#fragment``, if any, an
``id`` (or ``name``) in that file. Prints each broken link and exits 1 if there is one.
"""

from __future__ import annotations

import html
import os
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = ["broken_links", "main"]


# Sphinx writes every attribute in double quotes; a regular expression is much faster than an
# HTML parser on pages holding notebook images
_ATTR = re.compile(r'\s(href|src|id|name)="([^"]*)"')


class _Page:
    def __init__(self, text: str) -> None:
        self.links: list[str] = []
        self.ids: set[str] = set()
        for name, value in _ATTR.findall(text):
            value = html.unescape(value)
            if name in ("id", "name"):
                self.ids.add(value)
            else:
                self.links.append(value)


def _parse(path: Path, cache: dict[Path, _Page]) -> _Page:
    if path not in cache:
        cache[path] = _Page(path.read_text(encoding="utf-8", errors="replace"))
    return cache[path]


def broken_links(root: Path) -> list[str]:
    """``"page: link (reason)"`` for every local link of ``root``'s pages that does not
    resolve."""
    base = os.path.abspath(root)
    files = set()
    for folder, _dirs, names in os.walk(base):
        files.update(os.path.join(folder, name) for name in names)
    pages = sorted(f for f in files if f.endswith(".html"))
    pages = [f for f in pages if not f.startswith(os.path.join(base, "_static", ""))]
    cache: dict[Path, _Page] = {}
    broken = []
    for page in pages:
        folder = os.path.dirname(page)
        for link in _parse(Path(page), cache).links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc:  # external (http:, mailto:, data:, ...)
                continue
            target = page
            if parts.path:
                target = os.path.normpath(os.path.join(folder, unquote(parts.path)))
                if os.path.join(target, "index.html") in files:
                    target = os.path.join(target, "index.html")
            where = f"{os.path.relpath(page, base)}: {link}"
            if target not in files:
                broken.append(f"{where} (no such file)")
            elif parts.fragment and target.endswith(".html"):
                if unquote(parts.fragment) not in _parse(Path(target), cache).ids:
                    broken.append(f"{where} (no such anchor)")
    return broken


def main(argv: list[str]) -> int:
    root = Path(argv[1] if len(argv) > 1 else "docs/_build/html")
    if not root.is_dir():
        print(f"{root} is not a folder: build the documentation first.", file=sys.stderr)
        return 1
    broken = broken_links(root)
    for line in broken:
        print(f"broken link: {line}", file=sys.stderr)
    pages = sum(1 for p in root.rglob("*.html") if p.relative_to(root).parts[0] != "_static")
    if broken:
        print(f"{len(broken)} broken local links in {pages} pages.", file=sys.stderr)
        return 1
    print(f"Local links checked: {pages} pages, none broken.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
