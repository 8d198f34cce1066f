#!/bin/bash
# The differential fuzzer on the GPU (one device call): COUNT (default 2000) random tile
# programs from SEED, each compiled for the device's GPU, run there and compared with its
# numpy reference (tilelang/testing/fuzz; `python -m tilelang.testing.fuzz --help`).
# JOBS worker processes (default: the cores, at most 16) share the GPU; no program starts
# after BUDGET seconds (default 230), minimizing failures takes at most 40 more, so the
# call ends within about 5 minutes.
# Leaves $OUT/fuzz/{summary.md,summary.json,log.txt,fail_*.py,min_*.py}, all of it packed
# into $OUT/fuzz.tgz; the device machine returns only 8 files, so the fail_*.py files are
# then removed from $OUT/fuzz (they are in the archive). Prints the summary. Exit status
# 1 when any program failed.
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 OUT=${OUT:-/tmp/out} TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-/tmp/tl_fuzz_cache}
COUNT=${COUNT:-2000}
SEED=${SEED:-1}
JOBS=${JOBS:-$(( $(nproc) < 16 ? $(nproc) : 16 ))}
F=$OUT/fuzz
mkdir -p $F
{ nvidia-smi --query-gpu=index,name,driver_version --format=csv,noheader
  git rev-parse HEAD 2>/dev/null; git status --short 2>/dev/null | head -20; } > $F/device.txt 2>&1
python3 -m tilelang.testing.fuzz --target cuda --count $COUNT --seed $SEED --jobs $JOBS --timeout 120 \
  --budget ${BUDGET:-230} --minimize ${MINIMIZE:-3} --minimize-budget 40 --out $F \
  ${FUZZ_ARGS:-} > $F/log.txt 2>&1
rc=$?
grep -v "done (" $F/log.txt | tail -40
tar czf $OUT/fuzz.tgz -C $OUT fuzz
rm -f $F/fail_*.py
exit $rc
