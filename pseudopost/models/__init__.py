"""pseudopost.models"""
