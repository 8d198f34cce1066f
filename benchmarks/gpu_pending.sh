#!/bin/bash
# One device call for what was built without device time (third session): the GPU tests
# of the features that have compiled and passed their SASS checks but not yet run, the
# warp-specialized GEMM benchmark, and the published convolution example (from the
# git-excluded .pubex/, carried). Results under $OUT; each part has its own time limit.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=/tmp/tl_cache
mkdir -p $OUT
timeout ${T_TESTS:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
  tests/backend/cuda/test_run_gpu_warp_specialized.py tests/backend/cuda/test_run_gpu_clusters.py \
  tests/language/test_hopper_intrinsics.py tests/language/test_mma_ptx_intrinsics.py \
  tests/language/test_im2col.py tests/language/test_tile_schedule.py tests/language/test_random.py \
  > $OUT/gpu_pending_tests.txt 2>&1
tail -15 $OUT/gpu_pending_tests.txt
timeout ${T_BENCH:-120} python3 benchmarks/ws_gemm.py > $OUT/ws_gemm.txt 2>&1; tail -3 $OUT/ws_gemm.txt
if [ -d .pubex/examples/convolution ]; then
  (cd .pubex/examples/convolution && timeout 90 python3 -c "import example_convolution as m; m.main([])") \
    > $OUT/convolution.txt 2>&1; tail -2 $OUT/convolution.txt
fi
