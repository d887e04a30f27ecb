"""Evaluation of synthetic data: utility (ECDF, pMSE, estimates, CI overlap), membership inference
by outlier decile, attacks on releases, TSTR, scorer quality, and the measures agencies use with
synthpop's definitions (S_pMSE, table utility, repU and DiSCO).

Mechanism-agnostic: every function takes real train/test (and optionally reference) frames and a
synthetic frame; except :func:`frontier`, which takes a pseudo posterior fit and estimates these
measures and epsilon for other weight settings from its draws.
"""

from pseudopost.evaluate.disclosure import (
    attribute_risk,
    identification_risk,
    match_risk,
    synthetic_attribute_risk,
)
from pseudopost.evaluate.disclosure_tables import (
    DisclosureMeasures,
    disclosure_measures,
    multi_disclosure,
)
from pseudopost.evaluate.frontier import frontier, plot_frontier
from pseudopost.evaluate.membership import (
    MembershipResult,
    advantage,
    decile_advantages,
    distance_attack_scores,
    domias_attack_scores,
    membership_inference,
    run_attacks,
)
from pseudopost.evaluate.outliers import decile_labels, knn_outlier_scores
from pseudopost.evaluate.plots import plot_violins
from pseudopost.evaluate.propensity import PropensityUtility, propensity_utility
from pseudopost.evaluate.release_attacks import (
    LinkageResult,
    ReleaseMembershipResult,
    dp_accuracy_bound,
    histogram_features,
    linkage_attack,
    release_membership_inference,
)
from pseudopost.evaluate.scorer_quality import recall_at_top, scorer_spearman
from pseudopost.evaluate.table_utility import (
    TABLE_STATISTICS,
    TableUtility,
    utility_tab,
    utility_tables,
)
from pseudopost.evaluate.tstr import tstr_auroc
from pseudopost.evaluate.utility import (
    PMSEResult,
    ci_overlap,
    ecdf_utility,
    estimate_summary,
    interval_overlap,
    pmse,
    pmse_result,
)
from pseudopost.evaluate.whole_record import (
    WholeRecordUtility,
    association_difference,
    association_matrix,
    column_utility,
    identification_risk_table,
    match_risk_table,
    plot_association_difference,
    plot_marginals,
    whole_record_utility,
)

__all__ = [
    "TABLE_STATISTICS",
    "DisclosureMeasures",
    "LinkageResult",
    "MembershipResult",
    "PMSEResult",
    "PropensityUtility",
    "ReleaseMembershipResult",
    "TableUtility",
    "WholeRecordUtility",
    "advantage",
    "association_difference",
    "association_matrix",
    "attribute_risk",
    "ci_overlap",
    "column_utility",
    "decile_advantages",
    "decile_labels",
    "disclosure_measures",
    "distance_attack_scores",
    "domias_attack_scores",
    "dp_accuracy_bound",
    "ecdf_utility",
    "estimate_summary",
    "frontier",
    "histogram_features",
    "identification_risk",
    "identification_risk_table",
    "interval_overlap",
    "knn_outlier_scores",
    "linkage_attack",
    "match_risk",
    "match_risk_table",
    "membership_inference",
    "multi_disclosure",
    "plot_association_difference",
    "plot_frontier",
    "plot_marginals",
    "plot_violins",
    "pmse",
    "pmse_result",
    "propensity_utility",
    "recall_at_top",
    "release_membership_inference",
    "run_attacks",
    "scorer_spearman",
    "synthetic_attribute_risk",
    "tstr_auroc",
    "utility_tab",
    "utility_tables",
    "whole_record_utility",
]
