#!/bin/bash
# Fourth session's closing device call: every GPU test, then the benchmark suite (one
# process: ours, torch, Triton). Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=/tmp/tl_cache
mkdir -p $OUT
if [ "${SKIP_TESTS:-0}" != 1 ]; then
timeout ${T_TESTS:-200} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE tests > $OUT/gpu_tests.txt 2>&1
tail -4 $OUT/gpu_tests.txt
fi
timeout ${T_BENCH:-330} python3 benchmarks/bench_suite.py ${SUITE_ARGS:-} > $OUT/suite_stdout.txt 2>&1
tail -45 $OUT/suite_stdout.txt | grep "^|" | cut -c1-160
