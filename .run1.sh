#!/bin/bash
# session 18, device call 1: gpu tests of the new passes/layouts, the v32 perf cases, fuzz
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD
mkdir -p $OUT
pip install -q --no-index --find-links .devwheels pytest-xdist > /dev/null 2>&1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt
cat .commit >> $OUT/device.txt
timeout 200 python3 -m pytest -q -p no:cacheprovider -m gpu -n 8 tests/transform tests/backend/cuda/layout \
  tests/testing/test_fuzz.py tests/backend/cuda/plan > $OUT/gpu_tests.txt 2>&1; tail -5 $OUT/gpu_tests.txt
ONLY=deepseek_v32 T_PERF=240 WARM=4 bash -c 'mkdir -p /tmp/pr; CUDA_HOME=$(dirname $(dirname $(command -v nvcc))) timeout 240 python3 benchmarks/perf_regression.py --examples .pub/examples --published-results benchmarks/results/2026-12-02_h200_perf_regression_de1153c.json --out /tmp/pr --timeout 200 --warm 4 --only deepseek_v32 > /tmp/pr/log.txt 2>&1; tail -12 /tmp/pr/log.txt; cp /tmp/pr/*.md /tmp/pr/*.json $OUT/ 2>/dev/null'
COUNT=800 SEED=31 BUDGET=100 MINIMIZE=1 FUZZ_ARGS="--families Staging,Threads,AtomicScalar" bash benchmarks/gpu_fuzz.sh | tail -12
