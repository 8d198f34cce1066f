#!/bin/bash
# One device call that checks a commit on the GPU machine: this package's gpu-marked tests
# (xdist workers share the GPU) and the published example test files (several at once), side
# by side. Needs .pub/examples (the published repository's examples/, git-excluded); a
# folder of wheels to install first may be given as WHEELS (pytest-xdist and execnet: the
# GPU machine has no network). Results under $OUT: gpu_tests.txt, compat_examples.md, logs.tgz.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TL_COMMIT=${TL_COMMIT:-$(cat .commit 2>/dev/null)}
mkdir -p $OUT/logs
[ -n "${WHEELS:-}" ] && pip install -q --no-index --no-deps $WHEELS/*.whl 2>&1 | tail -1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt 2>&1
( timeout ${T_TESTS:-420} python3 -m pytest -q -p no:cacheprovider -m gpu -n ${TEST_JOBS:-6} tests ${TEST_ARGS:-} \
    > $OUT/gpu_tests.txt 2>&1; echo "exit $?" >> $OUT/gpu_tests.txt ) &
if [ "${SKIP_EXAMPLES:-0}" != 1 ]; then
  timeout ${T_EX:-420} python3 benchmarks/compat_examples.py --examples ${PUB:-.pub}/examples \
    --out $OUT/logs/examples --timeout ${T_EX_FILE:-400} --jobs ${EX_JOBS:-4} 2>&1 | grep -v Deprecation | tail -21
  cp $OUT/logs/examples/compat_examples.{md,json} $OUT/ 2>/dev/null
fi
wait
grep -E "passed|failed" $OUT/gpu_tests.txt | tail -3
grep -E "^(FAILED|ERROR)" $OUT/gpu_tests.txt | head -40
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
