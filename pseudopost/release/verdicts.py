r"""Verdicts a reader can act on, at the top of a whole-file release's report.

Each row is one measure, its value, the reference it is read against, and a verdict:

* **S_pMSE** of a CART propensity model (synthpop's ``utility.gen`` and its null), the mean
  over the synthetic datasets. References: 1 is what a file drawn from the same population
  gives (the null); synthpop's CART synthesis with its defaults gave
  :data:`SYNTHPOP_CART_SPMSE` on the public files of ``benchmarks/defaults.py``
  (``docs/benchmarks.md``). Read as *close* up to :data:`CLOSE`, *within synthpop CART's range*
  up to the largest of those, *beyond it* above.
* **The worst tables**: the one-way (columns) and two-way (pairs) tables of the first dataset
  with the largest S_pMSE (synthpop's ``utility.tables``; 1 under the null), named.
* **Columns beyond the real range**: numeric columns whose synthetic values leave the real
  minimum or maximum (inside the declared or DP support, which may be wider).
* **Declarations broken**: synthetic records breaking a declared rule or structural zero
  (reference 0: they are imposed).
* **Disclosure** (when keys and a target are declared): DiSCO beside Dorig, the share of real
  records whose target the keys disclose in the real file itself (the most a synthetic file
  could disclose), and repU.

These read the confidential data: the report is for the data holder.
"""

from __future__ import annotations

from collections.abc import Sequence

import pandas as pd

__all__ = ["CLOSE", "SYNTHPOP_CART_SPMSE", "verdicts"]

#: synthpop CART's S_pMSE (``utility.gen``, its defaults) on the public files of
#: ``benchmarks/defaults.py``: SLID, YRBSS, the May 1991 CPS, Adult (docs/benchmarks.md)
SYNTHPOP_CART_SPMSE = {"SLID": 0.63, "YRBSS": 1.78, "CPS 1991": 6.25, "Adult": 8.99}
#: S_pMSE up to this is read as close to the real file
CLOSE = 3.0
#: tables named per kind
WORST = 3


def _spmse_verdict(value: float) -> str:
    top = max(SYNTHPOP_CART_SPMSE.values())
    if value <= CLOSE:
        return "close: a CART model barely tells synthetic from real"
    if value <= top:
        return "within the range synthpop's CART reaches on public files"
    return "beyond synthpop CART's range on public files: see the worst tables"


def _worst(tables: pd.DataFrame | None) -> tuple[str, float]:
    if tables is None or not len(tables):
        return "-", float("nan")
    top = tables["S_pMSE"].sort_values(ascending=False).head(WORST)
    return ", ".join(f"{name} ({v:.3g})" for name, v in top.items()), float(top.iloc[0])


def verdicts(
    spmse: Sequence[float],
    oneway: pd.DataFrame | None,
    twoway: pd.DataFrame | None,
    beyond: Sequence[str],
    broken: int,
    disclosure: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The verdicts table (module docstring): ``spmse`` per dataset (synthpop's null),
    ``oneway`` and ``twoway`` the first dataset's :func:`~pseudopost.evaluate.utility_tables`,
    ``beyond`` the columns whose synthetic values leave the real range, ``broken`` the count of
    synthetic records breaking declarations, ``disclosure`` the per-dataset repU/DiSCO table."""
    rows = []
    mean = float(pd.Series(list(spmse), dtype=float).mean())
    refs = ", ".join(f"{k} {v:g}" for k, v in SYNTHPOP_CART_SPMSE.items())
    rows.append(("S_pMSE (CART propensity, synthpop's null)", f"{mean:.3g}",
                 f"1 = as close as a fresh sample; synthpop CART: {refs}",
                 _spmse_verdict(mean)))  # fmt: skip
    for kind, tables in (("columns (one-way tables)", oneway), ("pairs (two-way tables)", twoway)):
        names, worst = _worst(tables)
        verdict = (
            "-" if worst != worst
            else "close" if worst <= CLOSE
            else "look at these first: their synthetic shares differ most from the real ones"
        )  # fmt: skip
        rows.append((f"worst {kind}, S_pMSE", names, "1 under the null", verdict))
    rows.append(("columns beyond the real range", ", ".join(beyond) or "none",
                 "none: synthetic values inside the real minimum and maximum",
                 "declare the codebook's range (bounds) if these values are implausible"
                 if beyond else "ok"))  # fmt: skip
    rows.append(("synthetic records breaking a declared rule or zero", str(int(broken)), "0",
                 "ok" if broken == 0 else "a defect: report it"))  # fmt: skip
    if disclosure is not None and len(disclosure):
        d = disclosure[["repU", "DiSCO", "Dorig"]].astype(float).mean()
        rows.append(("DiSCO (% of real records disclosed, correct)", f"{d['DiSCO']:.3g}",
                     f"Dorig {d['Dorig']:.3g}: what the real file itself discloses by the keys",
                     "lower than the real file's own" if d["DiSCO"] < d["Dorig"]
                     else "as disclosive as the real file"))  # fmt: skip
        rows.append(("repU (% of real uniques replicated)", f"{d['repU']:.3g}",
                     "0: no real unique on the keys replicated", "lower is safer"))  # fmt: skip
    return pd.DataFrame(rows, columns=["measure", "value", "reference", "verdict"])
