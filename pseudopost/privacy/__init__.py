"""Accountants, noise calibration and privacy maps."""
