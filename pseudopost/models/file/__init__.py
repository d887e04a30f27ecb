"""The whole-file model: a sequential synthesizer of files as agencies hold them (missing cells,
codes, spikes, rules, structural zeros), one column part at a time.

Modules, one idea each: :mod:`~.declarations` (the public declarations, type-checked),
:mod:`~.encoding` (a column's status, value and levels), :mod:`~.choice` (how each column is
modelled), :mod:`~.design` (how an earlier column enters a later one: status one-hots, public
transforms, spline knots, interactions), :mod:`~.constraints` (rules and structural zeros against
the visit order), :mod:`~.plan` (every column's parts, all checks before fitting) and
:mod:`~.model` (:class:`FileModel`: data, parts, synthesis).
"""

from pseudopost.models.file.declarations import AUTO, Declarations
from pseudopost.models.file.model import FileModel, FilePrepared
from pseudopost.models.file.plan import ColumnPlan, FilePlan, PartPlan, make_plan

__all__ = [
    "AUTO",
    "ColumnPlan",
    "Declarations",
    "FileModel",
    "FilePlan",
    "FilePrepared",
    "PartPlan",
    "make_plan",
]
