"""The README is the front page: short, the quickstart near the top, links that resolve, and
every ``python`` block runs as written (in order, in one namespace)."""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\]\(([^)\s]+)\)")
COMMANDS = """```bash
bash scripts/demo.sh     # set up (finds Python >= 3.12, creates .venv) and run a real synthesis
bash scripts/test.sh     # run the test suite (what CI runs)
```"""


def _text() -> str:
    return README.read_text(encoding="utf-8")


def test_readme_is_short_with_the_quickstart_early():
    lines = _text().splitlines()
    assert len(lines) <= 150, f"README.md has {len(lines)} lines (at most 150)"
    assert any("pp.synthesize" in line for line in lines[:40])


def test_readme_keeps_the_two_commands():
    assert COMMANDS in _text()  # .ci/run runs the README's test command


@pytest.mark.parametrize(
    "page", [README, *sorted((ROOT / "docs").rglob("*.md"))], ids=lambda p: p.name
)
def test_relative_links_resolve(page):
    targets = [t for t in LINK.findall(page.read_text(encoding="utf-8")) if "://" not in t]
    missing = [
        t for t in targets if t.split("#")[0] and not (page.parent / t.split("#")[0]).exists()
    ]
    assert not missing, f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_quickstart_data_load():
    import pseudopost as pp

    assert pp.datasets.load_slid().shape == (7425, 5)
    assert pp.datasets.load_yrbss().shape == (13583, 13)


@pytest.mark.slow  # the quickstart synthesizes all of SLID at the defaults (over a minute)
@pytest.mark.filterwarnings("ignore::pseudopost.fitting.sampler.SamplingWarning")
def test_readme_python_blocks_run(tmp_path, monkeypatch, capsys):
    blocks = PYTHON_BLOCK.findall(_text())
    assert blocks and "pp.synthesize(" in blocks[0]
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "readme"}
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"README.md python block {number}", "exec"), namespace)
    out = namespace["out"]
    assert out.synthetic.shape == (7425, 5)
    assert out.epsilon > 0 and out.structure_epsilon == 1.0
    assert len(namespace["synthetic"]) == 5
    assert "DP" in capsys.readouterr().out
