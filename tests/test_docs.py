"""The documentation: the spec reference lists every key the release command checks, the API
reference every public name, and (slow) ``scripts/docs.sh`` builds with zero warnings and no
broken local link."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXT = ROOT / "docs" / "_ext"


def _load(name: str):
    """A module of docs/_ext (not a package: Sphinx puts the folder on sys.path)."""
    spec = importlib.util.spec_from_file_location(f"_docs_{name}", EXT / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _mechanism_block(text: str, name: str) -> str:
    """The part of the rendered page under the mechanism's heading."""
    title = "Common sections" if name == "common" else f"``{name}``"
    start = text.index(f"{title}\n{'-' * len(title)}\n")
    following = re.compile(r"^``\w+``\n-+\n", re.MULTILINE).search(text, start + 1)
    return text[start : following.start() if following else len(text)]


def test_spec_reference_covers_every_key_of_every_adapter():
    from pseudopost.release import ADAPTERS
    from pseudopost.release.spec import COMMON

    ref = _load("spec_reference")
    rows = ref.spec_rows()
    text = ref.render(rows)
    expected = {"common": {(s, k) for s, keys in COMMON.items() for k in keys}}
    for name, adapter in ADAPTERS.items():
        keys = {(s, k) for s, section in adapter.sections.items() for k in section}
        keys |= {("release", k) for k in adapter.release_keys}
        keys |= {("budget", k) for k in adapter.budget_keys}
        expected[name] = keys
    assert set(rows) == set(expected), "one table per mechanism, plus the common sections"
    for name, keys in expected.items():
        assert keys, f"{name} has no spec keys"
        listed = {(row.section, row.key) for row in rows[name]}
        assert listed == keys, f"{name}: missing {keys - listed}, extra {listed - keys}"
        assert all(row.expected for row in rows[name]), f"{name}: a key without 'expected'"
        block = _mechanism_block(text, name)
        for section, key in keys:
            assert f"* - ``[{section}]``\n     - ``{key}``\n" in block, (name, section, key)


def test_spec_reference_reads_required_and_expected_from_the_adapters():
    from pseudopost.release import ADAPTERS
    from pseudopost.release.schema import EXPECTED

    rows = _load("spec_reference").spec_rows()
    for name, adapter in ADAPTERS.items():
        by_key = {(row.section, row.key): row for row in rows[name]}
        for section, keys in adapter.sections.items():
            for key, (required, kind) in keys.items():
                row = by_key[(section, key)]
                assert row.required is bool(required), (name, section, key)
                if isinstance(kind, str):
                    assert row.expected == EXPECTED[kind], (name, section, key)


def test_api_reference_lists_every_public_name():
    api = _load("api_pages")
    where = api.documented()
    for module_name in api.MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if isinstance(obj, type(sys)):
                assert obj.__name__ in api.MODULES, f"{module_name}.{name}: no page"
            else:
                assert id(obj) in where, f"{module_name}.{name} is not documented"
    # every public package with an __all__ has a page
    for init in (ROOT / "pseudopost").rglob("__init__.py"):
        parts = init.parent.relative_to(ROOT).parts
        if any(p.startswith("_") for p in parts):
            continue
        name = ".".join(parts)
        if hasattr(importlib.import_module(name), "__all__"):
            assert name in api.MODULES, f"{name} has no page in the API reference"


@pytest.mark.slow  # a fresh build of every page (about a minute on 2 cores)
def test_docs_build_with_zero_warnings_and_no_broken_link():
    done = subprocess.run(
        ["bash", "scripts/docs.sh"], cwd=ROOT, capture_output=True, text=True, timeout=1800
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "none broken" in done.stdout
    html = ROOT / "docs" / "_build" / "html"
    for page in ("index", "spec-reference", "api/index", "notebooks/quickstart", "changelog"):
        assert (html / f"{page}.html").is_file(), page
