#!/bin/bash
# One device call (or part of one): every published example that benchmarks/example_mains.py lists
# as runnable on this machine, run as `python <file>` from its own folder under this package
# (JOBS at a time, T_FILE seconds each): does its own main() run to its end, its own checks
# included. Needs .pub/examples (the published repository's examples/, git-excluded).
# Writes $OUT/example_sweep/{rcs.txt,<file>.log} and prints the files whose rc is not 0 with
# the last lines of their output.
cd "$(dirname "$0")/.."
R=$PWD OUT=${OUT:-/tmp/out}
S=$OUT/example_sweep
mkdir -p $S
python3 benchmarks/example_mains.py --examples ${PUB:-.pub}/examples --list 2>/dev/null | awk -F': ' '$2=="run"{print $1}' > $S/files.txt
sweep_one(){ f=$1; n=$(echo $f | tr '/' '_'); ( cd $PUB_DIR/$(dirname $f) && PYTHONPATH=$R TILELANG_CACHE_DIR=${TILELANG_CACHE_DIR:-/tmp/tl_sweep} timeout $T_FILE python3 $(basename $f) > $S/$n.log 2>&1; echo "$f rc $?" >> $S/rcs.txt ); }
export -f sweep_one; export S R T_FILE=${T_FILE:-75} PUB_DIR=$R/${PUB:-.pub}/examples
timeout ${T_SWEEP:-300} xargs -P ${JOBS:-3} -I{} bash -c 'sweep_one {}' < $S/files.txt
echo "ran $(wc -l < $S/rcs.txt) of $(wc -l < $S/files.txt); rc != 0:"
sort $S/rcs.txt | awk '$3!=0'
for f in $(awk '$3!=0 {print $1}' $S/rcs.txt); do
  n=$(echo $f | tr '/' '_'); echo "-- $f"; grep -v "^\s*$" $S/$n.log | tail -2 | cut -c1-250
done
