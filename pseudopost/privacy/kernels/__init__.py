"""Numba kernels of the fused accountant (:mod:`pseudopost.privacy.fused`)."""
