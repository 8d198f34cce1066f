#!/bin/bash
# One device call after merging a session's branches: this package's gpu tests and the published
# examples (gpu_check.sh), then the published performance-regression suite under this package
# only, paired with the published package's figures of earlier reports on the same machine kind
# (PUBRES: comma-separated report .json files; perf_regression.py --published-results). Carried
# (git-excluded): .pub (the published examples/ and testing/), .devwheels. Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TL_COMMIT=${TL_COMMIT:-$(cat .commit 2>/dev/null)}
mkdir -p $OUT/perf
ln -sfn ../.pub .pub 2>/dev/null
WHEELS=$PWD/.devwheels bash benchmarks/gpu_check.sh
R=benchmarks/results
PUBRES=${PUBRES:-$R/2026-12-01_h200_perf_regression_19f60c9.json,$R/2026-12-01_h200_perf_regression_9229d17.json,$R/2026-12-01_h200_perf_regression_dbecff6.json,$R/2026-12-02_h200_perf_regression_9a41baf_rest.json}
timeout ${T_PERF:-300} python3 benchmarks/perf_regression.py --examples ${PUB:-.pub}/examples --out $OUT/perf \
  --timeout ${T_FILE:-150} --warm ${WARM:-8} ${ONLY:+--only $ONLY} --published-results $PUBRES > $OUT/perf/perf_regression.log 2>&1
tail -45 $OUT/perf/perf_regression.log
