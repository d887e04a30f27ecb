r"""The one shape every mechanism takes in the release command: :class:`MechanismAdapter`.

The command (:mod:`pseudopost.release.run`), the report and the ledger never ask which
mechanism they hold; they call the adapter's methods, in this order, and read the result's
:class:`~pseudopost.privacy.PrivacyStatement`:

========================  =====================================================================
spec                      ``sections`` (its sections and keys, with ``release_keys`` and
                          ``budget_keys`` it adds to the common ones) are checked by the one
                          loader; :meth:`~MechanismAdapter.parse` reads them (and cross-checks
                          them with the common ones) into the adapter's ``settings``
budget cap                :meth:`~MechanismAdapter.cap`: the most (epsilon, delta) the release
                          may charge, known before any work (the ledger's pre-check)
data                      :meth:`~MechanismAdapter.check_data` (columns, values),
                          :meth:`~MechanismAdapter.resolve` (released columns, data-dependent
                          defaults), :meth:`~MechanismAdapter.plan` (the mechanism builds and
                          accepts the data; what it builds is kept for the later steps)
produce                   :meth:`~MechanismAdapter.fit` (the fitted result, with
                          ``.privacy_statement``), then, once the statement's charge is within
                          the cap, :meth:`~MechanismAdapter.synthesize` (m datasets)
describe                  :meth:`~MechanismAdapter.measures`,
                          :meth:`~MechanismAdapter.privacy_record` (``privacy.json``),
                          :meth:`~MechanismAdapter.report_parts`,
                          :meth:`~MechanismAdapter.write_files` (e.g. the pseudo posterior's
                          ``fit.nc``)
re-account                :meth:`~MechanismAdapter.check_accountable`,
                          :meth:`~MechanismAdapter.account` (``pseudopost account``; refused
                          with a :class:`~pseudopost.release.errors.SpecError` unless the
                          mechanism has something to re-account)
========================  =====================================================================

A release reads its input once and plans once: the spec handed to every step after the checks
carries the input as read (the frame and an SPSS/Stata file's codebook) and the adapter's plan
(``spec.loaded``, a :class:`~pseudopost.release.schema.ReleaseInput`).

The ledger charges ``statement.charge(m)``: :math:`(m\varepsilon, m\delta)` for a statement per
synthetic dataset, :math:`(\varepsilon, \delta)` once for a statement per release.

A new mechanism is one module with a subclass and one line in
:data:`pseudopost.release.adapters.ADAPTERS`.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from pseudopost.privacy.statement import PrivacyStatement
from pseudopost.release.errors import ReleaseError, SpecError
from pseudopost.release.measures import Measures
from pseudopost.release.report import ReportParts
from pseudopost.release.schema import ReleaseInput, ReleaseSpec, Schema

__all__ = ["AccountResult", "MechanismAdapter", "Produced", "require_file"]


@dataclass
class Produced:
    """What a release produced, before anything is written: the fitted ``result`` (any object
    with ``.privacy_statement``), the m ``synthetic`` datasets, ``timings`` in seconds,
    ``per_record`` figures for the report (name -> one value per record), the fit's
    ``warnings`` and the rows per synthetic dataset."""

    result: Any
    timings: dict[str, float] = field(default_factory=dict)
    synthetic: list[pd.DataFrame] = field(default_factory=list)
    per_record: dict[str, np.ndarray] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    rows: int | None = None

    @property
    def statement(self) -> PrivacyStatement:
        """The result's privacy statement."""
        return self.result.privacy_statement


@dataclass(frozen=True)
class AccountResult:
    """The accountant re-run on a saved release."""

    epsilon: float
    saved_epsilon: float
    lipschitz: np.ndarray

    @property
    def agrees(self) -> bool:
        return bool(np.isclose(self.epsilon, self.saved_epsilon, rtol=1e-9, atol=1e-12))


class MechanismAdapter(ABC):
    """One mechanism in the release command (module docstring)."""

    #: the value of ``[mechanism] name``
    name: ClassVar[str]
    #: the adapter's sections in spec order (``"mechanism"`` included, with ``name``): key ->
    #: (required, kind), kinds as in :func:`pseudopost.release.schema.check_kind`
    sections: ClassVar[Mapping[str, Schema]]
    #: which of ``sections`` must be present
    required: ClassVar[tuple[str, ...]] = ("mechanism",)
    #: keys the adapter adds to the common [release] and [budget] sections
    release_keys: ClassVar[Schema] = {}
    budget_keys: ClassVar[Schema] = {}
    #: whether [release] must be present (e.g. when the seed sits there)
    release_required: ClassVar[bool] = False
    #: explanations of sections/keys of other mechanisms' layouts ("section" or "section.key")
    hints: ClassVar[Mapping[str, str]] = {}
    #: whether the synthetic data may hold empty cells (a whole file's missing answers); the
    #: command then refuses only infinite values, not NaN
    missing_cells: ClassVar[bool] = False

    # ------------------------------------------------------------------ spec
    @abstractmethod
    def parse(self, sections: Mapping[str, Mapping[str, Any]]) -> Any:
        """The adapter's settings (a frozen object with at least ``seed``) from the checked
        sections (its own and the common ones, for cross-checks); raises :class:`SpecError`."""

    @abstractmethod
    def cap(self, spec: ReleaseSpec) -> tuple[float, float]:
        """The most (epsilon, delta) this release may charge, from the spec alone (after
        :meth:`resolve`): the ledger's pre-check and the bound the statement is held to."""

    def describe(self, spec: ReleaseSpec) -> str:
        """What is released, in a few words (``pseudopost validate``)."""
        return f"{self.name} release of {len(spec.columns)} columns"

    # ------------------------------------------------------------------ data
    def check_data(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        """Check the spec's columns against the data (present, values usable)."""
        return None

    @abstractmethod
    def resolve(self, spec: ReleaseSpec, frame: pd.DataFrame) -> ReleaseSpec:
        """The spec with the released columns and data-dependent defaults filled in (the
        disclosure keys and sensitive column among them)."""

    def check_build(self, spec: ReleaseSpec, frame: pd.DataFrame) -> None:
        """Check that the mechanism builds and accepts the data, without any release."""
        return None

    def plan(self, spec: ReleaseSpec, data: ReleaseInput) -> Any:
        """Check that the mechanism builds and accepts the input (:meth:`check_build` by
        default) and return what it built that the later steps reuse, once per release (kept
        in ``spec.loaded.plan``; None by default)."""
        self.check_build(spec, data.frame)
        return None

    # ------------------------------------------------------------------ produce
    @abstractmethod
    def fit(self, spec: ReleaseSpec, data: pd.DataFrame, progress: bool | None = None) -> Produced:
        """Fit the release (no synthetic data yet); ``data`` is never modified. ``progress``:
        show progress bars where the mechanism has them (None: only in a terminal)."""

    @abstractmethod
    def synthesize(self, spec: ReleaseSpec, produced: Produced) -> list[pd.DataFrame]:
        """The m synthetic datasets of a fitted release."""

    def over_cap(self, spec: ReleaseSpec, statement: PrivacyStatement) -> Exception:
        """The error when the statement charges more than :meth:`cap` (default: a
        :class:`ReleaseError`, since the mechanism calibrated to the declared budget)."""
        eps, delta = statement.charge(spec.m)
        cap_eps, cap_delta = self.cap(spec)
        return ReleaseError(
            f"the {self.name} release charges (epsilon, delta) = ({eps:.6g}, {delta:.3g}), above "
            f"its declared cap ({cap_eps:.6g}, {cap_delta:.3g}); nothing was written and the "
            "ledger is unchanged. Fix: report this as a bug."
        )

    # ------------------------------------------------------------------ describe
    @abstractmethod
    def measures(
        self, spec: ReleaseSpec, data: pd.DataFrame, synthetic: list[pd.DataFrame]
    ) -> Measures:
        """Utility and disclosure tables (:mod:`pseudopost.release.measures`)."""

    @abstractmethod
    def privacy_record(self, spec: ReleaseSpec, produced: Produced) -> dict[str, Any]:
        """The mechanism's part of ``privacy.json`` (its stages and details); the command adds
        ``mechanism``, ``m``, ``statement``, ``guarantee_kind``, the disclosure keys and the
        measures."""

    @abstractmethod
    def report_parts(
        self, spec: ReleaseSpec, produced: Produced, privacy: Mapping[str, Any]
    ) -> ReportParts:
        """The mechanism's parts of ``report.html``."""

    def report_title(self, spec: ReleaseSpec) -> str:
        """The report's title."""
        return f"pseudopost release: {spec.data_path.name} ({spec.mechanism})"

    def write_files(self, stage: Path, spec: ReleaseSpec, produced: Produced) -> list[str]:
        """Extra files written into the staging folder (atomically); returns their names."""
        return []

    # ------------------------------------------------------------------ re-account
    def check_accountable(self, folder: Path) -> None:
        """Refuse ``pseudopost account`` on this release before any work, or check that the
        folder holds what :meth:`account` needs. By default there is nothing to re-account:
        the guarantee was fixed by the mechanism's calibration before the data were seen."""
        saved = ""
        path = folder / "privacy.json"
        if path.is_file():
            record = json.loads(path.read_text())
            if isinstance(record.get("statement"), dict):
                what = PrivacyStatement.from_dict(record["statement"]).describe()
            else:  # written before privacy.json carried the statement
                eps, delta = record.get("epsilon"), record.get("delta") or 0.0
                what = f"(epsilon, delta) = ({eps}, {delta})"
            saved = f" (its guarantee, {what}, was fixed by its calibration; see privacy.json)"
        raise SpecError(
            f"release folder {str(folder)!r} holds a {self.name} release: there is no "
            f"posterior to re-account for this mechanism{saved}. Fix: use 'pseudopost account' "
            "on pseudo posterior releases only."
        )

    def account(self, folder: Path, spec: ReleaseSpec, data: pd.DataFrame) -> AccountResult:
        """Re-run the accountant on a saved release (after :meth:`check_accountable`)."""
        self.check_accountable(folder)
        raise SpecError(f"release folder {str(folder)!r}: nothing to re-account.")


def require_file(folder: str | os.PathLike, name: str) -> None:
    """Refuse a release folder without ``name``."""
    if not (Path(folder) / name).is_file():
        raise SpecError(
            f"release folder {str(folder)!r} has no {name}. Fix: give the folder a "
            "'pseudopost synthesize' run wrote."
        )
