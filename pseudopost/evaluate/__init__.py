"""pseudopost.evaluate"""
