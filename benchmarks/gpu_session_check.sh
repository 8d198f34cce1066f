#!/bin/bash
# One device call after a session's merges: this package's gpu tests and the published
# examples (gpu_check.sh), the published test suite (gpu_conformance.sh), the published
# TileLang Puzzles and ours, the block-sparse probe, and tuning through Ray on this host's
# GPUs. Carried (git-excluded): .pub (published examples/testing), .tlpuzzles (a
# tile-ai/tilelang-puzzles checkout), .raypkg (ray's wheel contents, xz, and its
# dependencies' wheels: the GPU machine has no network), .devwheels. Results under $OUT.
cd "$(dirname "$0")/.."
export PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out}
mkdir -p $OUT
ln -sfn ../.pub .pub 2>/dev/null
WHEELS=$PWD/.devwheels bash benchmarks/gpu_check.sh
export PYTHONPATH=$PWD
if [ "${SKIP_CONFORMANCE:-0}" != 1 ]; then
  SKIP_EXAMPLES=1 JOBS=${JOBS:-12} OUT=$OUT/conf bash benchmarks/gpu_conformance.sh
fi
timeout 240 python3 benchmarks/puzzles_published.py ${PUZZLES:-../.tlpuzzles} --timeout 200 --log $OUT/puzzles_published.log \
  > $OUT/puzzles_published.txt 2>&1; tail -14 $OUT/puzzles_published.txt
timeout 120 python3 -m tilelang.puzzles verify --device cuda > $OUT/puzzles_ours.txt 2>&1; tail -3 $OUT/puzzles_ours.txt
timeout 120 python3 benchmarks/blocksparse_probe.py $OUT/blocksparse_probe.json > $OUT/blocksparse_probe.txt 2>&1
tail -8 $OUT/blocksparse_probe.txt
if [ -d ../.raypkg ]; then
  mkdir -p /tmp/raypkg && tar -xJf ../.raypkg/ray_min.tar.xz -C /tmp/raypkg
  for w in ../.raypkg/*.whl; do python3 -c "import sys, importlib.util as u; n=sys.argv[1].split('/')[-1].split('-')[0].lower(); sys.exit(0 if u.find_spec({'pyyaml':'yaml','protobuf':'google.protobuf','rpds_py':'rpds','charset_normalizer':'charset_normalizer','typing_extensions':'typing_extensions','jsonschema_specifications':'jsonschema_specifications'}.get(n, n)) else 1)" $w 2>/dev/null || python3 -m zipfile -e $w /tmp/raypkg; done
  PYTHONPATH=$PWD:/tmp/raypkg timeout 240 python3 -m pytest -q -p no:cacheprovider -m gpu tests/autotuner/test_ray_gpu.py \
    > $OUT/ray_gpu.txt 2>&1; tail -3 $OUT/ray_gpu.txt
fi
