import pytest

from tilelang.backend.cuda.host.nvrtc import nvrtc_available, cuobjdump_path


def sass_tools():
    return nvrtc_available() and cuobjdump_path() is not None


needs_nvrtc = pytest.mark.skipif(not nvrtc_available(), reason="NVRTC (cuda-bindings, nvidia-cuda-nvrtc) not installed")
needs_sass = pytest.mark.skipif(not sass_tools(), reason="NVRTC or cuobjdump/nvdisasm not installed")
