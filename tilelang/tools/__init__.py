"""Developer tools (published `tilelang.tools`): the lower trace's renderers (`trace/`),
the pass viewer (`pass_viewer.py`), layout plots (`plot_layout.py`) and the roofline
analyzer (`analyzer.py`). Cheap to import: matplotlib and the compiler load on first use."""
from tilelang.tools.plot_layout import plot_layout  # noqa: F401
from tilelang.tools.analyzer import Analyzer, AnalysisResult  # noqa: F401

__all__ = ["plot_layout", "Analyzer", "AnalysisResult"]
