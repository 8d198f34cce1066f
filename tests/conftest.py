import os
import tempfile

import pytest

# every test compiles into a private cache unless the caller chose one
os.environ.setdefault("TILELANG_CACHE_DIR", tempfile.mkdtemp(prefix="tilelang_test_cache_"))
os.environ.setdefault("TILELANG_DEFAULT_TARGET", "cpu")


def _has_gpu():
    try:
        import torch
        return torch.cuda.is_available()
    except ImportError:
        return False


def pytest_collection_modifyitems(config, items):
    if _has_gpu():
        return
    skip = pytest.mark.skip(reason="no NVIDIA GPU found")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
