#!/bin/bash
# One device call: the published examples' regression_*.py under this package and under the
# published TileLang (issue 17). Needs, carried and git-excluded: .pub/examples (the published
# repository's examples/) and .pubpkg.tar.xz (tilelang==0.1.15 and its wheels for Python 3.12,
# unzipped into one folder and packed with xz; see the developers' brief; z3-solver<4.15.5, as tilelang 0.1.15
# requires: it loads libz3.so.4.15). ONLY=<folders>.
# TL_COMMIT (or a .commit file) names the commit measured when the copy has no .git.
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TL_COMMIT=${TL_COMMIT:-$(cat .commit 2>/dev/null)}
mkdir -p $OUT /tmp/pubpkg
tar -xJf .pubpkg.tar.xz -C /tmp/pubpkg
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
timeout ${T_PERF:-560} python3 benchmarks/perf_regression.py --examples ${PUB:-.pub}/examples --published /tmp/pubpkg \
  --out $OUT --timeout ${T_FILE:-240} --warm ${WARM:-8} ${ONLY:+--only $ONLY} > $OUT/perf_regression.log 2>&1
tail -40 $OUT/perf_regression.log
