#!/bin/bash
# One device call for a session's GPU results. Parts (PARTS, space-separated, default
# "tests suite"):
#   tests   every `gpu`-marked test of the tree
#   suite   benchmarks/bench_suite.py (ours, torch, Triton in one process; SUITE_ARGS)
#   gemm    benchmarks/gemm_cases.py (VARIANTS compares code-generation switches)
#   attn    benchmarks/attention_cases.py (the same for FlashAttention; AVARIANTS)
#   ws      benchmarks/ws_gemm.py (warp-specialized TMA GEMM)
#   tune    autotuning on one GPU, then on every GPU
# The machine returns only a few files per call: logs go into $OUT/logs.tgz, and the
# summaries (suite.md, gpu_tests tail) are printed. Published examples: gpu_compat.sh.
# Pass TL_COMMIT=<full hash> (the device's copy of .git may be stale).
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=/tmp/tl_cache
L=$OUT/logs
mkdir -p $L
nvidia-smi --query-gpu=index,name,driver_version --format=csv > $L/device.txt 2>&1
python3 -c "import sys, torch, triton; print(sys.version.split()[0], 'torch', torch.__version__, 'triton', triton.__version__)" \
  >> $L/device.txt 2>&1
for part in ${PARTS:-tests fuzz suite}; do
  case $part in
    tests) timeout ${T_TESTS:-200} python3 -m pytest -q -p no:cacheprovider -m gpu -rfE tests > $L/gpu_tests.txt 2>&1
           tail -4 $L/gpu_tests.txt ;;
    fuzz)  OUT=$L BUDGET=${T_FUZZ:-150} bash benchmarks/gpu_fuzz.sh | tail -15 ;;
    suite) OUT=$L timeout ${T_SUITE:-330} python3 benchmarks/bench_suite.py ${SUITE_ARGS:-} > $L/suite_log.txt 2>&1
           cp $L/suite.md $L/suite.json $OUT/ 2>/dev/null; grep "^|" $L/suite.md | cut -c1-160 ;;
    gemm)  OUT=$L timeout ${T_GEMM:-200} python3 benchmarks/gemm_cases.py > $L/gemm_cases.txt 2>&1
           cut -c1-220 $L/gemm_cases.txt | tail -12 ;;
    attn)  OUT=$L VARIANTS="${AVARIANTS:-}" timeout ${T_ATTN:-200} python3 benchmarks/attention_cases.py > $L/attention_cases.txt 2>&1
           cut -c1-220 $L/attention_cases.txt | tail -12 ;;
    ws)    OUT=$L timeout ${T_WS:-120} python3 benchmarks/ws_gemm.py > $L/ws_gemm.txt 2>&1; tail -3 $L/ws_gemm.txt ;;
    tune)  CUDA_VISIBLE_DEVICES=0 timeout ${T_TUNE:-100} python3 benchmarks/autotune_gpu.py --label 1gpu > $L/tune_1gpu.txt 2>&1
           timeout ${T_TUNE:-100} python3 benchmarks/autotune_gpu.py --label allgpus > $L/tune_all.txt 2>&1
           grep -h '^{' $L/tune_1gpu.txt $L/tune_all.txt ;;
  esac
done
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $L
