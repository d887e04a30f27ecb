"""Bridge to synthpop (R) for benchmarks: ``syn()``, ``utility.gen()`` and ``disclosure()``.

synthpop is the agencies' reference for sequential synthesis of microdata; it is a benchmark
peer here, never a dependency of the package. Each call writes the frames to CSV in a temporary
folder (with R column classes, so that a categorical column of digits stays categorical and
missing cells stay missing), runs one ``Rscript`` and reads the result back. Columns travel as
``V1``, ``V2``, ... (R formulas choke on names such as ``education-num``) and get their names
back. Every function returns None, after printing why, when R or synthpop is absent; install
them with ``bash ../shared/peers/install-synthpop.sh`` (as root, about 3 minutes).

Run as a script it times ``syn()`` (CART, synthpop's default) on Adult (all 48,842 records,
15 columns, "?" cells missing) and on YRBSS (13,583 records, 13 columns, as it is) and prints
the table; ``--measures`` also compares synthpop's ``utility.gen`` (CART S_pMSE) and
``disclosure()`` on each synthetic file with :mod:`pseudopost.evaluate`'s:

    .venv/bin/python benchmarks/_synthpop.py [--measures] [--seed 1]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import tempfile
import textwrap
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from pseudopost.evaluate import disclosure_measures, propensity_utility

__all__ = [
    "SynResult",
    "compare_fit",
    "disclosure",
    "synthesize",
    "synthpop_available",
    "utility_gen",
]

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.exists():
    DATA = Path("/work/shared/data")


def synthpop_available(*, quiet: bool = False) -> bool:
    """Whether ``Rscript`` and the R package synthpop can be run (prints why not)."""
    why = None
    if shutil.which("Rscript") is None:
        why = "Rscript is not on the PATH"
    else:
        probe = subprocess.run(
            ["Rscript", "-e", 'quit(status = !requireNamespace("synthpop", quietly = TRUE))'],
            capture_output=True,
            check=False,
        )
        if probe.returncode != 0:
            why = "the R package synthpop is not installed"
    if why and not quiet:
        print(f"synthpop skipped: {why} (bash ../shared/peers/install-synthpop.sh).")
    return why is None


def _is_numeric(s: pd.Series) -> bool:
    return pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)


def _write(frame: pd.DataFrame, folder: Path, name: str) -> None:
    """CSV with columns V1..Vk, empty fields for missing cells, and a file of R classes."""
    out = frame.copy()
    out.columns = [f"V{i + 1}" for i in range(frame.shape[1])]
    for c in out.columns:
        if not _is_numeric(out[c]):
            out[c] = out[c].astype(object).where(out[c].notna(), None)
            out[c] = out[c].map(lambda v: None if v is None or v == "" else str(v))
    out.to_csv(folder / f"{name}.csv", index=False, na_rep="")
    classes = ["numeric" if _is_numeric(frame[c]) else "factor" for c in frame.columns]
    (folder / f"{name}.classes").write_text("\n".join(classes) + "\n")


def _write_codes(frame: pd.DataFrame, codes: Mapping[str, Sequence[float]] | None, path: Path):
    """cont.na as lines 'Vj<TAB>code'."""
    lines = []
    for col, values in (codes or {}).items():
        j = list(frame.columns).index(col) + 1
        lines += [f"V{j}\t{float(v)!r}" for v in values]
    path.write_text("\n".join(lines) + ("\n" if lines else ""))


@contextmanager
def _pair_folder(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    cont_na: Mapping[str, Sequence[float]] | None,
) -> Iterator[Path]:
    """A temporary folder holding ``real`` and ``synthetic`` (as :func:`_write` codes them) and
    ``real``'s cont.na codes, for one ``Rscript`` call."""
    with tempfile.TemporaryDirectory(prefix="synthpop_") as tmp:
        folder = Path(tmp)
        _write(real, folder, "real")
        _write(synthetic, folder, "syn")
        _write_codes(real, cont_na, folder / "codes.tsv")
        yield folder


_R_COMMON = textwrap.dedent(
    """
    suppressMessages(library(synthpop))
    args <- commandArgs(TRUE)
    dir <- args[1]
    rd <- function(f) {
      cls <- readLines(file.path(dir, paste0(f, ".classes")))
      read.csv(file.path(dir, paste0(f, ".csv")), na.strings = "", colClasses = cls)
    }
    rc <- function() {
      tab <- read.delim(file.path(dir, "codes.tsv"), header = FALSE, colClasses = c("character",
                        "numeric"))
      if (nrow(tab) == 0) return(NULL)
      split(tab[[2]], tab[[1]])
    }
    """
)
_R_CODES_GUARD = 'if (file.info(file.path(dir, "codes.tsv"))$size == 0) rc <- function() NULL\n'


def _run(script: str, folder: Path, *extra: str, timeout: float) -> float:
    """Run an R script in ``folder``; wall seconds around the call. Raises on failure."""
    (folder / "run.R").write_text(_R_COMMON + _R_CODES_GUARD + script)
    start = time.perf_counter()
    done = subprocess.run(
        ["Rscript", str(folder / "run.R"), str(folder), *extra],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    wall = time.perf_counter() - start
    if done.returncode != 0:
        raise RuntimeError(f"Rscript failed:\n{done.stderr[-3000:]}")
    return wall


@dataclass(frozen=True)
class SynResult:
    """A synthpop synthesis and its timing.

    Attributes
    ----------
    synthetic : pandas.DataFrame
        The synthetic file, with the input's column names and kinds.
    wall_seconds : float
        Wall time around the ``Rscript`` call (R start-up, CSV in and out, ``syn()``).
    r_seconds : float
        ``system.time(syn(...))["elapsed"]`` measured by R: the synthesis alone.
    r_cpu_seconds : float
        User plus system CPU seconds of ``syn()`` (R's ``system.time``): what the synthesis
        costs on a busy machine, where elapsed time also counts other processes.
    """

    synthetic: pd.DataFrame
    wall_seconds: float
    r_seconds: float
    r_cpu_seconds: float


def synthesize(
    frame: pd.DataFrame,
    *,
    cont_na: Mapping[str, Sequence[float]] | None = None,
    seed: int = 1,
    method: str = "cart",
    proper: bool = False,
    timeout: float = 3600.0,
) -> SynResult | None:
    """synthpop's ``syn(frame, method = method, proper = proper, cont.na = cont_na, seed =
    seed)``: CART, its default, for all; ``"parametric"`` for its default parametric model of
    each kind (``norm``, ``logreg``, ``polyreg``, ``polr``), with ``proper=True`` each column's
    parameters drawn from their posterior (a proper synthesis) rather than fixed at their
    estimates.

    Returns None (after a printed message) when R or synthpop is absent.
    """
    if not synthpop_available():
        return None
    with tempfile.TemporaryDirectory(prefix="synthpop_") as tmp:
        folder = Path(tmp)
        _write(frame, folder, "data")
        _write_codes(frame, cont_na, folder / "codes.tsv")
        script = textwrap.dedent(
            """
            d <- rd("data")
            seed <- as.integer(args[2])
            t <- system.time(s <- syn(d, seed = seed, cont.na = rc(), method = args[3],
                                      proper = as.logical(args[4]), print.flag = FALSE))
            write.csv(s$syn, file.path(dir, "syn.csv"), row.names = FALSE, na = "")
            writeLines(sprintf("%.6f", c(t[["elapsed"]], t[["user.self"]] + t[["sys.self"]])),
                       file.path(dir, "elapsed.txt"))
            """
        )
        wall = _run(script, folder, str(int(seed)), method, str(bool(proper)).upper(),
                    timeout=timeout)  # fmt: skip
        syn = pd.read_csv(folder / "syn.csv", keep_default_na=False, na_values=[""])
        r_seconds, r_cpu = (float(v) for v in (folder / "elapsed.txt").read_text().split())
    syn.columns = list(frame.columns)
    for c in frame.columns:
        if _is_numeric(frame[c]):
            syn[c] = pd.to_numeric(syn[c])
        else:
            syn[c] = syn[c].astype(object).where(syn[c].notna(), None)
    return SynResult(synthetic=syn, wall_seconds=wall, r_seconds=r_seconds, r_cpu_seconds=r_cpu)


def utility_gen(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    method: str = "cart",
    cont_na: Mapping[str, Sequence[float]] | None = None,
    nperms: int = 50,
    maxorder: int = 1,
    seed: int = 1,
    timeout: float = 3600.0,
) -> dict[str, float] | None:
    """synthpop's ``utility.gen(synthetic, real, method, maxorder, nperms, cont.na)``.

    Returns pMSE, S_pMSE (synthpop's null), SPECKS, PO50, U, df (logit) and the wall and R
    seconds, or None when R or synthpop is absent.
    """
    if not synthpop_available():
        return None
    if list(real.columns) != list(synthetic.columns):
        raise ValueError("'real' and 'synthetic' must have the same columns in the same order.")
    with _pair_folder(real, synthetic, cont_na) as folder:
        script = textwrap.dedent(
            """
            d <- rd("real"); s <- rd("syn")
            set.seed(as.integer(args[2]))
            t <- system.time(u <- utility.gen(s, d, method = args[3], maxorder = as.integer(args[4]),
                                             nperms = as.integer(args[5]), cont.na = rc(),
                                             print.flag = FALSE))
            df <- if (is.null(u$df) || length(u$df) == 0) NA else u$df
            v <- c(pMSE = u$pMSE, S_pMSE = u$S_pMSE, SPECKS = unname(u$SPECKS), PO50 = u$PO50,
                   U = unname(u$U), df = df, r_seconds = t[["elapsed"]])
            write.csv(data.frame(name = names(v), value = sprintf("%.17g", v)),
                      file.path(dir, "out.csv"), row.names = FALSE)
            """
        )
        wall = _run(script, folder, str(seed), method, str(maxorder), str(nperms), timeout=timeout)
        out = _read_values(folder / "out.csv")
    out["wall_seconds"] = wall
    return out


def disclosure(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    keys: Sequence[str],
    target: str,
    *,
    cont_na: Mapping[str, Sequence[float]] | None = None,
    timeout: float = 3600.0,
) -> dict[str, float] | None:
    """synthpop's ``disclosure(synthetic, real, keys, target, cont.na)`` with its defaults.

    Returns the identity (UiO, UiS, UiOiS, repU), attribute (Dorig, Dsyn, iS, DiS, DiSCO,
    DiSDiO, max_denom, mean_denom) and CAP measures, or None when R or synthpop is absent; and
    ``DiSCO_small``, ``DiSDiO_small``: the same with ``exclude_ov_denom_lim = TRUE`` (only real
    (key, target) cells of at most ``denom_lim`` = 5 records count: synthpop's exclusion of
    what an intruder learns about a whole group rather than about a few records).
    """
    if not synthpop_available():
        return None
    cols = list(real.columns)
    with _pair_folder(real, synthetic[cols], cont_na) as folder:
        key_names = ",".join(f"V{cols.index(k) + 1}" for k in keys)
        script = textwrap.dedent(
            """
            d <- rd("real"); s <- rd("syn")
            keys <- strsplit(args[2], ",")[[1]]
            r <- disclosure(s, d, keys = keys, target = args[3], cont.na = rc(),
                            print.flag = FALSE)
            # the same, counting only (key, target) cells of at most denom_lim (5) real
            # records: synthpop's own exclusion of inferences about larger groups
            r5 <- disclosure(s, d, keys = keys, target = args[3], cont.na = rc(),
                             print.flag = FALSE, exclude_ov_denom_lim = TRUE)
            v <- c(unlist(r$ident), unlist(r$attrib), unlist(r$allCAPs),
                   DiSCO_small = r5$attrib$DiSCO, DiSDiO_small = r5$attrib$DiSDiO)
            write.csv(data.frame(name = sub("[.].*$", "", names(v)), value = sprintf("%.17g", v)),
                      file.path(dir, "out.csv"), row.names = FALSE)
            """
        )
        target_name = f"V{cols.index(target) + 1}"
        _run(script, folder, key_names, target_name, timeout=timeout)
        return _read_values(folder / "out.csv")


def compare_fit(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    outcome: str,
    predictors: Sequence[str],
    *,
    family: str = "gaussian",
    timeout: float = 3600.0,
) -> dict[str, float] | None:
    """synthpop's ``compare.fit.synds``: the main-effects regression ``outcome ~ predictors``
    fitted on the synthetic file (``lm.synds`` for ``family="gaussian"``, else ``glm.synds``
    with that family, e.g. ``"binomial"``) and compared with the same fit on ``real``.

    The synthetic file may come from any synthesizer: it is wrapped as a one-file ``synds``
    object (m = 1, n = ``len(real)``, k = ``len(synthetic)``, every column synthesized, not
    proper). A categorical column of the synthetic file takes the real file's levels (a level
    the real file lacks becomes missing). Returns ``mean_ci_overlap`` (Karr et al. 2006's
    interval overlap, the mean over the coefficients, as ``compare.fit.synds`` prints it),
    ``mean_abs_std_diff`` (mean absolute standardized coefficient difference), ``ncoef`` and
    ``lof_pvalue`` (synthpop's lack-of-fit test), or None when R or synthpop is absent.
    """
    if not synthpop_available():
        return None
    cols = list(real.columns)
    if list(synthetic.columns) != cols:
        raise ValueError("'real' and 'synthetic' must have the same columns in the same order.")
    v = {c: f"V{j + 1}" for j, c in enumerate(cols)}
    formula = f"{v[outcome]} ~ {' + '.join(v[p] for p in predictors)}"
    with _pair_folder(real, synthetic, None) as folder:
        script = textwrap.dedent(
            """
            d <- rd("real"); s <- rd("syn")
            for (v in names(d)) if (is.factor(d[[v]])) s[[v]] <- factor(s[[v]],
                                                                        levels = levels(d[[v]]))
            sd <- list(syn = s, m = 1L, n = nrow(d), k = nrow(s), proper = FALSE,
                       method = setNames(rep("cart", ncol(d)), names(d)),
                       visit.sequence = setNames(seq_len(ncol(d)), names(d)))
            class(sd) <- "synds"
            fo <- as.formula(args[2])
            # the family as a literal: glm.synds evaluates its call where 'args' is base::args
            f <- if (args[3] == "gaussian") lm.synds(fo, data = sd) else
              eval(parse(text = sprintf("glm.synds(fo, family = %s, data = sd)", args[3])))
            cmp <- compare(f, d, print.coef = FALSE, plot = "Z", return.plot = FALSE)
            lof <- if (is.null(cmp$lof.pvalue)) NA else cmp$lof.pvalue
            v <- c(mean_ci_overlap = cmp$mean.ci.overlap,
                   mean_abs_std_diff = cmp$mean.abs.std.diff, ncoef = cmp$ncoef,
                   lof_pvalue = lof)
            write.csv(data.frame(name = names(v), value = sprintf("%.17g", v)),
                      file.path(dir, "out.csv"), row.names = FALSE)
            """
        )
        _run(script, folder, formula, family, timeout=timeout)
        return _read_values(folder / "out.csv")


def _read_values(path: Path) -> dict[str, float]:
    table = pd.read_csv(path, dtype=str, keep_default_na=False)
    return {
        n: (float("nan") if v in ("NA", "NaN") else float(v))
        for n, v in zip(table["name"], table["value"], strict=True)
    }


# --------------------------------------------------------------------------------------------
# Timing syn() on the agencies' kind of file
# --------------------------------------------------------------------------------------------

FILES = {
    # name: (loader, disclosure keys, disclosure target)
    "adult": (
        lambda: pd.read_csv(DATA / "adult.csv.gz", na_values=["?"], skipinitialspace=True),
        ["age", "sex", "race", "marital-status"],
        "income",
    ),
    "yrbss": (
        lambda: pd.read_csv(DATA / "yrbss.csv"),
        ["age", "gender", "grade", "race"],
        "helmet_12m",
    ),
}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--measures", action="store_true", help="compare S_pMSE and DiSCO too")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--files", nargs="*", default=list(FILES))
    args = parser.parse_args(argv)
    if not synthpop_available():
        return 0
    rows = []
    for name in args.files:
        load, keys, target = FILES[name]
        frame = load()
        res = synthesize(frame, seed=args.seed)
        assert res is not None
        row = {
            "file": name,
            "records": len(frame),
            "columns": frame.shape[1],
            "missing cells": int(frame.isna().sum().sum()),
            "syn() wall s": res.wall_seconds,
            "syn() R elapsed s": res.r_seconds,
            "syn() R CPU s": res.r_cpu_seconds,
            "synthetic missing cells": int(res.synthetic.isna().sum().sum()),
        }
        if args.measures:
            syn = res.synthetic
            ug = utility_gen(frame, syn, seed=args.seed)
            start = time.perf_counter()
            ours = propensity_utility(frame, syn, nperms=50, seed=args.seed)
            ours_s = time.perf_counter() - start
            dis = disclosure(frame, syn, keys, target)
            ours_dis = disclosure_measures(frame, syn, keys, target)
            row |= {
                "pMSE synthpop": ug["pMSE"],
                "pMSE pseudopost": ours.pMSE,
                "S_pMSE synthpop": ug["S_pMSE"],
                "S_pMSE_synthpop pseudopost": ours.S_pMSE_synthpop,
                "utility.gen wall s": ug["wall_seconds"],
                "propensity_utility s": ours_s,
                "repU synthpop": dis["repU"],
                "repU pseudopost": ours_dis.repU,
                "DiSCO synthpop": dis["DiSCO"],
                "DiSCO pseudopost": ours_dis.DiSCO,
            }
        rows.append(row)
        print(f"{name}: done", flush=True)
    table = pd.DataFrame(rows).T
    table.columns = table.loc["file"]
    table = table.drop(index="file")
    print("\n## synthpop syn() (CART default) on whole files\n")
    print(table.to_markdown(floatfmt=".4g"))
    return 0


if __name__ == "__main__":
    np.seterr(all="ignore")
    raise SystemExit(main())
