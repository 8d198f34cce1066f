#!/bin/bash
# One device call: GPU tests, the examples on CUDA, the benchmark. Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD:$PYTHONPATH PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p $OUT
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv > $OUT/device.txt 2>&1
python3 -c "import cuda.bindings, torch; print('cuda-bindings', cuda.bindings.__version__, 'torch', torch.__version__)" >> $OUT/device.txt 2>&1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/backend/cuda 2>&1 | tee $OUT/pytest_cuda.txt | tail -15
TILELANG_DEFAULT_TARGET=cuda timeout 120 python3 benchmarks/cuda_examples.py 2>&1 | tee $OUT/examples.txt | grep -v " ok" 
timeout ${BENCH_TIMEOUT:-240} python3 benchmarks/cuda_bench.py "$@" 2>&1 | tee $OUT/bench.txt | grep -v "^{"
