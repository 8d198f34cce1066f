#!/bin/bash
# One device call: the published TileLang's own tests (testing/python/language and kernel)
# and its example tests, run against this package on the GPU machine. The published files
# are not part of this repository: copy tile-ai/tilelang's testing/python/{language,kernel}
# to .pub/testing/python/ and its examples/ to .pub/examples (git-excluded), write its
# `git describe` into .pub/REVISION, and carry .pub. Results (md/json) and logs.tgz under $OUT.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TL_COMMIT=${TL_COMMIT:-$(cat .commit 2>/dev/null)}
mkdir -p $OUT/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/device.txt 2>&1
if [ "${SKIP_CONFORMANCE:-0}" != 1 ]; then
  timeout ${T_CONF:-450} python3 benchmarks/conformance.py --repo ${PUB:-.pub} --jobs ${JOBS:-8} \
    --timeout ${T_FILE:-240} --out $OUT --logs $OUT/logs/conformance ${CONF_ARGS:-} 2>&1 | tail -4
fi
if [ "${SKIP_EXAMPLES:-0}" != 1 ]; then
  timeout ${T_EX:-200} python3 benchmarks/compat_examples.py --examples ${PUB:-.pub}/examples \
    --out $OUT/logs/examples --timeout ${T_EX_FILE:-150} --jobs ${EX_JOBS:-1} 2>&1 | grep -v DeprecationWarning | tail -22
  cp $OUT/logs/examples/compat_examples.md $OUT/ 2>/dev/null
fi
if [ "${SKIP_TESTS:-1}" != 1 ]; then
  timeout ${T_TESTS:-300} python3 -m pytest -q -p no:cacheprovider -m gpu tests ${TEST_ARGS:-} > $OUT/logs/gpu_tests.txt 2>&1
  tail -5 $OUT/logs/gpu_tests.txt
fi
tar czf $OUT/logs.tgz -C $OUT logs && rm -rf $OUT/logs
