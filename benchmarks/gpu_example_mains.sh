#!/bin/bash
# One device call: the published examples' own `python <example>.py` (their main() prints the
# latency / TFLOPs) under this package and under the published TileLang 0.1.15, side by side
# (issue 16 item 7; benchmarks/example_mains.py). Needs, carried and git-excluded: .pub/examples
# (the published repository's examples/) and .pubpkg.tar.xz (tilelang==0.1.15 and its wheels for
# Python 3.12, unzipped into one folder and packed with xz). ONLY=<substrings of folder/file>,
# RESUME=<an earlier report .json in the tree> runs only what it has not run. The whole call stays
# under T_TOTAL (default 550 s): files that no longer fit are listed as skipped in the report.
# TL_COMMIT (or a .commit file) names the commit measured when the copy has no .git.
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TL_COMMIT=${TL_COMMIT:-$(cat .commit 2>/dev/null)}
mkdir -p $OUT /tmp/pubpkg /tmp/example_mains_logs
tar -xJf .pubpkg.tar.xz -C /tmp/pubpkg
export CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(command -v nvcc)")")}
LEFT=$(( ${T_TOTAL:-550} - SECONDS - 15 ))   # unpacking took SECONDS; 15 s for the report and the tar
timeout $(( LEFT + 10 )) python3 benchmarks/example_mains.py --examples ${PUB:-.pub}/examples --published /tmp/pubpkg \
  --out $OUT --timeout ${T_FILE:-180} --warm ${WARM:-8} --deadline $LEFT --logs /tmp/example_mains_logs \
  ${ONLY:+--only $ONLY} ${RESUME:+--resume $RESUME} > $OUT/example_mains.log 2>&1
echo "exit $? after ${SECONDS} s" >> $OUT/example_mains.log
tar -czf $OUT/example_mains_logs.tgz -C /tmp example_mains_logs
tail -60 $OUT/example_mains.log
