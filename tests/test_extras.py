"""Optional extras: a core install (no extra) imports pseudopost and runs ``pp.synthesize`` and
``PseudoPosterior``; a missing extra's ImportError names the extra to install."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from pseudopost._extras import EXTRAS, require

#: hides the extras' modules in a child interpreter, as if they were not installed: the path
#: finder is wrapped so that it finds none of them (``import`` raises ModuleNotFoundError,
#: ``importlib.util.find_spec`` returns None, and sys.modules holds no entry for them, as with
#: a package that is not there: a None entry there makes SciPy's array-API helpers, which read
#: sys.modules["jax"], call getattr on None)
_BLOCK = textwrap.dedent(
    """
    import importlib.machinery
    import sys
    BLOCKED = {blocked!r}
    _PATH = importlib.machinery.PathFinder

    class _Hidden:
        @staticmethod
        def find_spec(name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                return None
            return _PATH.find_spec(name, path, target)

        @staticmethod
        def invalidate_caches():
            _PATH.invalidate_caches()

        @staticmethod
        def find_distributions(*args, **kwargs):
            for dist in _PATH.find_distributions(*args, **kwargs):
                if dist.metadata["Name"].lower().replace("-", "_") not in BLOCKED:
                    yield dist

    sys.meta_path[:] = [_Hidden if f is _PATH else f for f in sys.meta_path]
    """
)


def test_a_missing_extra_is_named(monkeypatch):
    for module, extra in (("mbi", "prism"), ("opendp", "opendp"), ("pyreadstat", "formats"),
                          ("statsmodels", "evaluate")):  # fmt: skip
        monkeypatch.setitem(sys.modules, module, None)  # import raises ImportError
        with pytest.raises(ImportError, match=rf"pip install 'pseudopost\[{extra}\]'"):
            require(module, "This step")
    assert require("numpy", "x").__name__ == "numpy"


def test_core_install_runs_both_ways_in(tmp_path):
    blocked = sorted({*EXTRAS, "jaxlib", "networkx"})  # pyarrow: nutpie needs it
    code = _BLOCK.format(blocked=blocked) + textwrap.dedent(
        f"""
        import warnings; warnings.simplefilter("ignore")
        import numpy as np, pandas as pd
        import pseudopost as pp
        from pseudopost.models import LogNormalRegression
        data = pp.datasets.simulate_lognormal(200, seed=1)
        r = pp.PseudoPosterior(LogNormalRegression("x", ["z"])).fit(
            data, draws=50, tune=50, chains=1, seed=1, progress=False)
        assert r.epsilon > 0 and len(r.synthesize(seed=2)) == 200
        rng = np.random.default_rng(0)
        frame = pd.DataFrame({{"age": rng.integers(18, 90, 200),
                              "sex": pd.Categorical(rng.choice(["f", "m"], 200))}})
        out = pp.synthesize(frame, seed=1, draws=30, tune=30, chains=1, progress=False)
        assert out.synthetic.shape == (200, 2)
        leaked = sorted(m for m in sys.modules if m.split(".")[0] in BLOCKED)
        assert not leaked, leaked
        from pseudopost.mechanisms.prism.pgm import load_mbi
        try:
            load_mbi()
        except ImportError as e:
            assert "pseudopost[prism]" in str(e), e
        else:
            raise AssertionError("mbi imported")
        from pseudopost.formats import read_file
        open({str(tmp_path / "x.sav")!r}, "wb").write(b"not spss")
        try:
            read_file({str(tmp_path / "x.sav")!r})
        except ImportError as e:
            assert "pseudopost[formats]" in str(e), e
        print("core ok")
        """
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=600, cwd=tmp_path)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "core ok" in proc.stdout
