"""A pure-Python implementation of TileLang."""
__version__ = "0.1.0"
