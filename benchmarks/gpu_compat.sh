#!/bin/bash
# One device call: the published example tests on our package (issue 6) and our own
# GPU tests. The published examples are not in this repository: copy tile-ai/tilelang
# v0.1.13's examples/ to .pubex/examples (git-excluded) and carry it. Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=/tmp/tl_cache
mkdir -p $OUT/logs
# packages some published examples compare against (e.g. flash-linear-attention for
# linear_attention), carried as wheels in .whl/ (git-excluded) where the machine lacks them
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt 2>&1
if [ "${SKIP_COMPAT:-0}" != 1 ]; then
  timeout ${T_COMPAT:-400} python3 benchmarks/compat_examples.py --examples .pubex/examples --out $OUT/logs \
    --timeout ${T_FILE:-150} ${COMPAT_ARGS:---extra} 2>&1 | grep -v DeprecationWarning | tee $OUT/compat_summary.txt
  cp $OUT/logs/compat_examples.json $OUT/logs/compat_examples.md $OUT/ 2>/dev/null
fi
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  timeout ${T_TESTS:-150} python3 -m pytest -q -p no:cacheprovider -m gpu tests -x ${TEST_ARGS:-} > $OUT/logs/gpu_tests.txt 2>&1
  tail -5 $OUT/logs/gpu_tests.txt
fi
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
