r"""A classification tree for a 0/1 label grown and pruned as R's ``rpart`` grows and prunes it.

synthpop's CART propensity score (``utility.gen(method = "cart")``) is
``rpart(t ~ ., method = "class", control = rpart.control(cp = 1e-3, minbucket = 5))`` and the
score of a record is the share of label 1 in its leaf. For pMSE values that compare with
synthpop's, this module follows rpart 4.1 (``partition.c``, ``bsplit.c``, ``gini.c``,
``graycode.c``, ``nodesplit.c``) step for step, with its default priors (the class frequencies)
and 0/1 loss, under which every record weighs 1:

* a node's risk is its misclassification count, :math:`\min(n_0, n_1)`; :math:`\alpha =
  cp \cdot R(\text{root})`;
* a node is split when it has at least ``minsplit`` records (R: ``3 * minbucket`` when only
  ``minbucket`` is given), its risk (capped by the complexity its parent passed down) exceeds
  :math:`\alpha` and its depth is at most ``maxdepth``;
* the split minimises the Gini impurity :math:`\sum_{side} n_{side}\sum_j p_j(1-p_j)` with at
  least ``minbucket`` records on each side: for a numeric column between consecutive distinct
  values (cut at the midpoint), for a categorical column between the levels ordered by their
  share of label 0 (exact for two classes); the first best split (lowest cut, first column)
  wins and the side with the smaller share of label 1 goes left;
* after both children are grown, the node's complexity
  :math:`(R(t) - R(T_t)) / (|T_t| - 1)` is computed with rpart's bookkeeping of which child
  collapses first, and a node whose complexity is at most :math:`\alpha` loses its subtree.

Records with the same value of a numeric column are never separated. Missing values do not
occur: synthpop replaces them (0 plus an indicator column, or a level) before fitting.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["CartDesign"]

_LEFT, _RIGHT = -1, 1


@dataclass
class _Node:
    risk: float
    complexity: float


@dataclass(frozen=True)
class _Split:
    column: int
    cut: float  # numeric columns
    direction: int  # numeric columns: side of x < cut
    goes_left: np.ndarray | None  # categorical columns: bool per level


def _impurity(l0, l1, r0, r1):
    """rpart's ``temp``: sum over classes of n_side * p * (1 - p), in rpart's order of terms."""
    lwt, rwt = l0 + l1, r0 + r1
    with np.errstate(invalid="ignore", divide="ignore"):
        pl0, pr0, pl1, pr1 = l0 / lwt, r0 / rwt, l1 / lwt, r1 / rwt
        temp = lwt * (pl0 * (1.0 - pl0))
        temp = temp + rwt * (pr0 * (1.0 - pr0))
        temp = temp + lwt * (pl1 * (1.0 - pl1))
        temp = temp + rwt * (pr1 * (1.0 - pr1))
    return temp, pl1, pr1


class CartDesign:
    """Predictor columns, presorted once, for rpart trees on any 0/1 label of the same rows.

    Parameters
    ----------
    columns : sequence
        One entry per predictor, in the formula's order: a float array (numeric) or a pair
        ``(codes, n_levels)`` of 0-based integer level codes (categorical; level order breaks
        ties as R's factor level order does).
    """

    def __init__(self, columns: Sequence[np.ndarray | tuple[np.ndarray, int]]) -> None:
        numeric, categorical, n_levels, kinds = [], [], [], []
        for col in columns:
            if isinstance(col, tuple):
                codes, n_lev = col
                kinds.append(("cat", len(categorical)))
                categorical.append(np.asarray(codes, dtype=np.int64))
                n_levels.append(int(n_lev))
            else:
                kinds.append(("num", len(numeric)))
                numeric.append(np.asarray(col, dtype=float))
        sizes = {a.size for a in numeric + categorical}
        if len(sizes) > 1:
            raise ValueError("All predictor columns must have the same length.")
        self.n = sizes.pop() if sizes else 0
        self.kinds = kinds
        self.x_num = np.array(numeric).reshape(len(numeric), self.n)
        self.order = np.argsort(self.x_num, axis=1, kind="stable")
        self.x_cat = np.array(categorical).reshape(len(categorical), self.n).T.copy()
        self.n_levels = np.array(n_levels, dtype=np.int64)
        self.max_levels = int(self.n_levels.max()) if n_levels else 0

    def leaf_probabilities(
        self,
        y: np.ndarray,
        *,
        cp: float = 0.01,
        minbucket: int = 7,
        minsplit: int | None = None,
        maxdepth: int = 30,
    ) -> tuple[np.ndarray, int]:
        """Share of label 1 in each record's leaf, and the number of splits of the tree.

        Parameters
        ----------
        y : numpy.ndarray
            0/1 labels, one per row.
        cp, minbucket, minsplit, maxdepth
            ``rpart.control`` parameters; ``minsplit`` defaults to ``3 * minbucket`` as
            ``rpart.control`` sets it when only ``minbucket`` is given.
        """
        y = np.asarray(y)
        if y.shape != (self.n,):
            raise ValueError(f"'y' must have one label per row ({self.n}); got {y.shape}.")
        grower = _Grower(
            self,
            y.astype(np.float64),
            cp=cp,
            minbucket=minbucket,
            minsplit=3 * minbucket if minsplit is None else minsplit,
            maxdepth=maxdepth,
        )
        return grower.run()


class _Grower:
    def __init__(self, design: CartDesign, y: np.ndarray, *, cp, minbucket, minsplit, maxdepth):
        self.d = design
        self.y = y
        self.edge = int(minbucket)
        self.minsplit = int(minsplit)
        self.maxnode = 2**maxdepth - 1
        n1 = float(y.sum())
        self.root_risk = min(n1, design.n - n1)
        self.alpha = cp * self.root_risk
        self.iscale = 0.0
        self.side = np.zeros(design.n, dtype=bool)

    def run(self) -> tuple[np.ndarray, int]:
        rows = np.arange(self.d.n)
        root = _Node(risk=self.root_risk, complexity=self.root_risk)
        _, _, leaves = self._partition(1, root, rows, self.d.order)
        prob = np.empty(self.d.n)
        for leaf in leaves:
            prob[leaf] = self.y[leaf].sum() / leaf.size
        return prob, len(leaves) - 1

    # rpart's partition(): returns (number of splits, risk of the subtree, leaves)
    def _partition(self, nodenum: int, node: _Node, rows: np.ndarray, sorts: np.ndarray):
        n = rows.size
        if nodenum > 1:
            n1 = float(self.y[rows].sum())
            node.risk = min(n1, n - n1)
            tempcp = min(node.risk, node.complexity)
        else:
            tempcp = node.risk
        if n < self.minsplit or tempcp <= self.alpha or nodenum > self.maxnode:
            node.complexity = self.alpha
            return 0, node.risk, [rows]
        split = self._bsplit(rows, sorts)
        if split is None:
            node.complexity = self.alpha
            return 0, node.risk, [rows]
        left_rows, right_rows, left_sorts, right_sorts = self._nodesplit(split, rows, sorts)

        left = _Node(risk=0.0, complexity=tempcp - self.alpha)
        left_split, left_risk, left_leaves = self._partition(
            2 * nodenum, left, left_rows, left_sorts
        )
        tempcp = (node.risk - left_risk) / (left_split + 1)
        tempcp2 = node.risk - left.risk
        if tempcp < tempcp2:
            tempcp = tempcp2
        if tempcp > node.complexity:
            tempcp = node.complexity
        right = _Node(risk=0.0, complexity=tempcp - self.alpha)
        right_split, right_risk, right_leaves = self._partition(
            2 * nodenum + 1, right, right_rows, right_sorts
        )

        tempcp = (node.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
        if right.complexity > left.complexity:
            if tempcp > left.complexity:  # the left son collapses first
                left_risk, left_split = left.risk, 0
                tempcp = (node.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
                if tempcp > right.complexity:
                    right_risk, right_split = right.risk, 0
        elif tempcp > right.complexity:  # the right son goes first
            right_risk, right_split = right.risk, 0
            tempcp = (node.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
            if tempcp > left.complexity:
                left_risk, left_split = left.risk, 0
        node.complexity = (node.risk - (left_risk + right_risk)) / (left_split + right_split + 1)
        if node.complexity <= self.alpha:  # all was in vain: this node does not split
            return 0, node.risk, [rows]
        return left_split + right_split + 1, left_risk + right_risk, left_leaves + right_leaves

    # rpart's bsplit() with gini(), every column of a kind at once: the best split, or None
    def _bsplit(self, rows: np.ndarray, sorts: np.ndarray) -> _Split | None:
        n = rows.size
        n1 = float(self.y[rows].sum())
        n0 = n - n1
        p0, p1 = n0 / n, n1 / n  # everyone on the right: rwt * I(right), class by class
        total_ss = n * (p0 * (1.0 - p0))
        total_ss = total_ss + n * (p1 * (1.0 - p1))
        num = self._numeric(sorts, n, n1, total_ss)
        cat = self._categorical(rows, total_ss)
        best, best_improve = -1, 0.0
        for j, (kind, i) in enumerate(self.d.kinds):  # in column order, as rpart's loop
            improve = float(num[0][i] if kind == "num" else cat[0][i])
            if improve > self.iscale:
                self.iscale = improve
            if improve > self.iscale * 1e-10 and (best < 0 or improve > best_improve):
                best, best_improve = j, improve
        if best < 0:
            return None
        kind, i = self.d.kinds[best]
        if kind == "num":
            xs, k, where, direction = num[1]
            cut = (xs[i, where[i]] + xs[i, where[i] + 1]) / 2
            return _Split(best, cut, int(direction[i]), None)
        order, k = cat[1]
        first = np.zeros(self.d.max_levels, dtype=bool)
        first[order[i, : k[i] + 1]] = True
        return _Split(best, 0.0, _LEFT, first if cat[2][i] else ~first)

    def _numeric(self, sorts: np.ndarray, n: int, n1: float, total_ss: float):
        """Best cut of every numeric column: (improve per column, details of the cuts)."""
        p = sorts.shape[0]
        improve = np.zeros(p)
        if p == 0 or n < 2 * self.edge:
            return improve, None
        xs = np.take_along_axis(self.d.x_num, sorts, axis=1)
        c1 = np.cumsum(self.y[sorts], axis=1)
        i = np.arange(self.edge - 1, n - self.edge)  # left size i + 1, right size n - i - 1
        valid = xs[:, i + 1] != xs[:, i]
        lwt = (i + 1).astype(np.float64)
        l1 = c1[:, i]
        l0 = lwt - l1
        r1 = n1 - l1
        r0 = (n - lwt) - r1
        temp, pl1, pr1 = _impurity(l0, l1, r0, r1)
        temp = np.where(valid, temp, np.inf)
        k = np.argmin(temp, axis=1)
        rows = np.arange(p)
        tmin = temp[rows, k]
        found = (tmin < total_ss) & (xs[:, 0] != xs[:, -1])
        improve[found] = total_ss - tmin[found]
        direction = np.where(pl1[rows, k] < pr1[rows, k], _LEFT, _RIGHT)
        return improve, (xs, k, i[k], direction)

    def _categorical(self, rows: np.ndarray, total_ss: float):
        """Best split of every categorical column over its levels ordered by share of 0s."""
        p, width = self.d.x_cat.shape[1], self.d.max_levels
        improve = np.zeros(p)
        if p == 0 or width < 2:
            return improve, None, None
        codes = self.d.x_cat[rows] + np.arange(p) * width
        countn = np.bincount(codes.ravel(), minlength=p * width).reshape(p, width)
        cnt1 = np.bincount(
            codes.ravel(), weights=np.repeat(self.y[rows], p), minlength=p * width
        ).reshape(p, width)
        countn = countn.astype(np.float64)
        cnt0 = countn - cnt1
        present = countn > 0
        with np.errstate(invalid="ignore", divide="ignore"):
            rate = np.where(present, cnt0 / countn, np.inf)  # absent levels sorted last
        order = np.argsort(rate, axis=1, kind="stable")  # graycode_init2
        l0 = np.cumsum(np.take_along_axis(cnt0, order, axis=1), axis=1)[:, :-1]
        l1 = np.cumsum(np.take_along_axis(cnt1, order, axis=1), axis=1)[:, :-1]
        ltot = l0 + l1
        total = float(rows.size)
        r0 = cnt0.sum(axis=1)[:, None] - l0
        r1 = cnt1.sum(axis=1)[:, None] - l1
        n_present = present.sum(axis=1)
        position = np.arange(width - 1)
        valid = (
            (position[None, :] < n_present[:, None] - 1)
            & (ltot >= self.edge)
            & (total - ltot >= self.edge)
        )
        temp, pl1, pr1 = _impurity(l0, l1, r0, r1)
        temp = np.where(valid, temp, np.inf)
        k = np.argmin(temp, axis=1)
        idx = np.arange(p)
        tmin = temp[idx, k]
        found = tmin < total_ss
        improve[found] = total_ss - tmin[found]
        first_goes_left = pl1[idx, k] < pr1[idx, k]
        return improve, (order, k), first_goes_left

    # rpart's nodesplit(): the rows (and presorted rows) of the two children
    def _nodesplit(self, split: _Split, rows: np.ndarray, sorts: np.ndarray):
        kind, i = self.d.kinds[split.column]
        if kind == "num":
            below = self.d.x_num[i, rows] < split.cut
            left = below if split.direction == _LEFT else ~below
        else:
            left = split.goes_left[self.d.x_cat[rows, i]]
        side = self.side
        side[rows] = left
        n_left = int(left.sum())
        mask = side[sorts]
        p = sorts.shape[0]
        left_sorts = sorts[mask].reshape(p, n_left)
        right_sorts = sorts[~mask].reshape(p, rows.size - n_left)
        return rows[left], rows[~left], left_sorts, right_sorts
