"""pseudopost: privacy-protected synthetic microdata."""

__version__ = "0.1.0"
