"""pseudopost.releases"""
