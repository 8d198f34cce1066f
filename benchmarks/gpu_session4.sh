#!/bin/bash
# Fourth session, one device call: python version and the CPU-compile diagnostics of
# test_random on the GPU host, the GPU tests touched by TMA multicast and the scheduler
# index fix, then the GEMM cases with multicast on and off (same process). Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=/tmp/tl_cache
mkdir -p $OUT
python3 -VV > $OUT/python.txt; which g++ >> $OUT/python.txt; g++ --version | head -1 >> $OUT/python.txt
if [ "${SKIP_DIAG:-0}" != 1 ]; then
timeout 120 python3 -m pytest -q -p no:cacheprovider -rfE tests/language/test_random.py tests/language/test_tile_schedule.py \
  > $OUT/random_schedule.txt 2>&1; tail -4 $OUT/random_schedule.txt
cp /tmp/tilelang_failed_*.cpp $OUT/ 2>/dev/null
fi
if [ "${BISECT:-0}" = 1 ]; then   # which earlier test file breaks test_random's CPU compile
for X in tests/backend/cuda/test_run_gpu_warp_specialized.py tests/backend/cuda/test_run_gpu_clusters.py \
  tests/language/test_hopper_intrinsics.py tests/language/test_mma_ptx_intrinsics.py tests/language/test_im2col.py \
  tests/language/test_tile_schedule.py; do
  echo "== $X" >> $OUT/bisect.txt
  timeout 60 python3 -m pytest -q -p no:cacheprovider -m gpu $X tests/language/test_random.py -k "not curand" 2>&1 | tail -2 >> $OUT/bisect.txt
done
cat $OUT/bisect.txt
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
timeout ${T_TESTS:-300} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE ${TESTS:-tests/backend/cuda/test_tma_multicast.py \
  tests/backend/cuda/test_run_gpu.py tests/examples/test_examples_cuda.py} > $OUT/gpu_tests.txt 2>&1
tail -6 $OUT/gpu_tests.txt
fi
VARIANTS=${VARIANTS:-"TILELANG_CUDA_TMA_MULTICAST=1;TILELANG_CUDA_TMA_MULTICAST=0"} timeout ${T_BENCH:-200} python3 benchmarks/gemm_cases.py \
  > $OUT/gemm_cases.txt 2>&1; cut -c1-220 $OUT/gemm_cases.txt | tail -10
