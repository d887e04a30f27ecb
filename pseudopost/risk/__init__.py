"""pseudopost.risk"""
