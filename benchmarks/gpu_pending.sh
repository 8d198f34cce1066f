#!/bin/bash
# One device call for what was built without device time (third session): the GPU tests
# of the features that have compiled and passed their SASS checks but not yet run, the
# warp-specialized GEMM benchmark, and the published convolution example (from the
# git-excluded .pubex/, carried), then the published examples whose layout annotations
# are now kept. Results under $OUT; each part has its own time limit. Within one
# 10-minute device command: `COMPAT=none bash benchmarks/gpu_pending.sh`, then
# `SKIP_TESTS=1 bash benchmarks/gpu_pending.sh` (or COMPAT=all for every folder).
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=/tmp/tl_cache
mkdir -p $OUT
if ls .whl/*.whl >/dev/null 2>&1; then   # e.g. flash-linear-attention for linear_attention (carry .whl)
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
timeout ${T_TESTS:-240} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE \
  tests/backend/cuda/test_run_gpu_warp_specialized.py tests/backend/cuda/test_run_gpu_clusters.py \
  tests/language/test_hopper_intrinsics.py tests/language/test_mma_ptx_intrinsics.py \
  tests/language/test_im2col.py tests/language/test_tile_schedule.py tests/language/test_random.py \
  tests/backend/cuda/test_annotate_layout.py \
  > $OUT/gpu_pending_tests.txt 2>&1
tail -15 $OUT/gpu_pending_tests.txt
timeout ${T_BENCH:-120} python3 benchmarks/ws_gemm.py > $OUT/ws_gemm.txt 2>&1; tail -3 $OUT/ws_gemm.txt
if [ -d .pubex/examples/convolution ]; then
  (cd .pubex/examples/convolution && timeout 90 python3 -c "import example_convolution as m; m.main([])") \
    > $OUT/convolution.txt 2>&1; tail -2 $OUT/convolution.txt
fi
fi
# the published examples again (shared-buffer layout annotations are now kept): the
# folders that annotate layouts, or all with COMPAT=all
if [ "${COMPAT:-some}" != none ]; then
  ONLY="--only attention_sink flash_attention gdn dequantize_gemm linear_attention gemm"
  [ "${COMPAT:-some}" = all ] && ONLY=""
  timeout ${T_COMPAT:-300} python3 benchmarks/compat_examples.py --examples .pubex/examples --out $OUT \
    --timeout 150 --extra $ONLY 2>&1 | grep -v Warning | tail -8
fi
