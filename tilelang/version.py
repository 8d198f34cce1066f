"""The package version (pyproject.toml has the same), importable without the package."""
__version__ = "0.1.0"
