"""Markov blankets of hand-made DAGs and DAG validation."""

import pytest

from pseudopost.mechanisms.prism.datasets import SCM_DAG
from pseudopost.mechanisms.prism.regimes import check_acyclic, markov_blanket, parents_of


def test_markov_blanket_scm():
    assert markov_blanket(SCM_DAG, "Y") == sorted(["A", "B", *[f"S{j}" for j in range(1, 11)]])
    assert parents_of(SCM_DAG, "Y") == ["A", "B"]


def test_markov_blanket_with_co_parents_edges_form():
    # Koller & Friedman style: U -> Y, Y -> C <- W, C -> D, V -> U, Y -> E
    edges = [("U", "Y"), ("Y", "C"), ("W", "C"), ("C", "D"), ("V", "U"), ("Y", "E")]
    assert markov_blanket(edges, "Y") == ["C", "E", "U", "W"]
    assert markov_blanket(edges, "C") == ["D", "W", "Y"]
    assert markov_blanket(edges, "V") == ["U"]


def test_markov_blanket_isolated_and_mapping_form():
    dag = {"Y": [], "X": [], "Z": ["X"]}
    assert markov_blanket(dag, "Y") == []
    assert markov_blanket({"Y": ["X"], "K": ["Y", "J"]}, "Y") == ["J", "K", "X"]


def test_cyclic_graph_is_rejected():
    with pytest.raises(ValueError, match="not acyclic"):
        check_acyclic([("A", "B"), ("B", "C"), ("C", "A")])
    with pytest.raises(ValueError, match="self-loop"):
        markov_blanket({"A": ["A"]}, "A")


def test_target_not_in_dag():
    with pytest.raises(ValueError, match="not a node"):
        markov_blanket({"Y": ["X"]}, "Q")
