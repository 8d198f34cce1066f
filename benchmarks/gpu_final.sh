#!/bin/bash
# One device call for the session's GPU results: GPU tests, the benchmark suite,
# and autotuning on one GPU then on every GPU. Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p $OUT
nvidia-smi --query-gpu=index,name,driver_version --format=csv > $OUT/device.txt 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >> $OUT/device.txt 2>&1
timeout ${T_SUITE:-230} python3 benchmarks/bench_suite.py ${SUITE_ARGS:-} > $OUT/suite_log.txt 2>&1
tail -40 $OUT/suite.md 2>/dev/null
timeout ${T_TESTS:-120} python3 -m pytest -q -p no:cacheprovider -m gpu tests > $OUT/gpu_tests.txt 2>&1
tail -3 $OUT/gpu_tests.txt
CUDA_VISIBLE_DEVICES=0 timeout ${T_TUNE:-100} python3 benchmarks/autotune_gpu.py --label 1gpu > $OUT/tune_1gpu_log.txt 2>&1
grep '^{' $OUT/tune_1gpu_log.txt
timeout ${T_TUNE:-100} python3 benchmarks/autotune_gpu.py --label allgpus > $OUT/tune_all_log.txt 2>&1
grep '^{' $OUT/tune_all_log.txt
