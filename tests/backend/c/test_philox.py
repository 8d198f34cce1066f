"""backend/c/include/tl_philox.h: the one Philox4x32-10 both backends include. Built
standalone with the host compiler, its draws equal the reference model of
tests/language/test_random.py; NVRTC compiles the same file for the GPU, and both
backends' headers reach it (so the CPU and GPU streams cannot drift apart)."""
import os
import subprocess

import numpy as np
import pytest

from tilelang.backend.c import INCLUDE_DIR
from tests.language.test_random import draws, uniform

PROGRAM = r"""
#include <cstdio>
#include "tl_philox.h"
int main(int argc, char** argv) {
  unsigned long long seed = std::strtoull(argv[1], 0, 10), seq = std::strtoull(argv[2], 0, 10);
  unsigned long long off = std::strtoull(argv[3], 0, 10);
  unsigned s[16];
  tl::rng_init(s, seed, seq, off);
  for (int i = 0; i < 9; ++i) std::printf("%u\n", tl::rng_rand(s));
  unsigned r[4];
  tl::rng_rand4(s, r);   // the next four, the position in the block unchanged
  for (int i = 0; i < 4; ++i) std::printf("%u\n", r[i]);
  tl::rng_init(s, seed, seq, off);
  for (int i = 0; i < 5; ++i) std::printf("%.9e\n", (double)tl::rng_uniform(s));
  return 0;
}
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    from tilelang.backend.cpu.compiler import find_compiler
    d = tmp_path_factory.mktemp("philox")
    src, exe = d / "philox.cpp", d / "philox"
    src.write_text("#include <cstdlib>\n" + PROGRAM)
    subprocess.run([find_compiler(), "-O2", "-std=c++17", f"-I{INCLUDE_DIR}", str(src), "-o", str(exe)], check=True)
    return exe


@pytest.mark.parametrize("seed,seq,off", [(42, 0, 0), (2 ** 40 + 7, 3, 6), (1, 2 ** 33 + 1, 2 ** 34 + 3)])
def test_host_build_draws_the_reference_stream(program, seed, seq, off):
    out = subprocess.run([str(program), str(seed), str(seq), str(off)], capture_output=True, text=True,
                         check=True).stdout.split()
    ints = np.array([int(x) for x in out[:9]], np.uint32)
    np.testing.assert_array_equal(ints, draws(seed, seq, off, 9))
    # rng_rand4 after 9 draws: words 9..12 of the stream
    np.testing.assert_array_equal(np.array([int(x) for x in out[9:13]], np.uint32), draws(seed, seq, off + 9, 4))
    unif = np.array([float(x) for x in out[13:]], np.float32)
    np.testing.assert_array_equal(unif, uniform(draws(seed, seq, off, 5)))


def test_both_backends_include_the_shared_generator():
    here = os.path.dirname
    backend = here(here(INCLUDE_DIR))
    cpu = open(os.path.join(backend, "cpu", "include", "tl_cpu_random.h")).read()
    cuda = open(os.path.join(backend, "cuda", "include", "tl_cuda", "random.h")).read()
    for text in (cpu, cuda):
        assert '#include "tl_philox.h"' in text and "refill" not in text
    from tilelang.backend.cpu.compiler import flags
    from tilelang.backend.cuda.host.nvrtc import compile_options
    assert f"-I{INCLUDE_DIR}" in flags()
    assert f"-I{INCLUDE_DIR}" in compile_options("sm_90a")


def test_nvrtc_compiles_the_generator_for_the_gpu():
    from tilelang.backend.cuda.host.nvrtc import compile_cuda, nvrtc_available
    if not nvrtc_available():
        pytest.skip("NVRTC (cuda-bindings, nvidia-cuda-nvrtc) not installed")
    src = ('#include "tl_cuda/tl.h"\n'
           'extern "C" __global__ void k(unsigned* a, float* b, double* c) {\n'
           '  unsigned s[16];\n  tl::rng_init(s, 1ull, threadIdx.x, 0ull);\n'
           '  a[threadIdx.x] = tl::rng_rand(s);\n  b[threadIdx.x] = tl::rng_normal(s);\n'
           '  c[threadIdx.x] = tl::rng_normal_double(s) + tl::rng_uniform_double(s);\n}\n')
    out = compile_cuda(src, "sm_90a")
    assert out.cubin and ".local" not in out.ptx   # the 16-word state stays in registers
