"""`python -m tilelang.puzzles list | show N | start N | check N [--file F] | solve N`."""
from __future__ import annotations

import argparse
import os
import shutil
import sys

from tilelang.puzzles import PUZZLES, exercise_path, get, solution_path


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tilelang.puzzles",
                                 description="TileLang puzzles: ten exercises, checked on the CPU or a GPU.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    sub.add_parser("list", help="the ten puzzles")
    p = sub.add_parser("show", help="print an exercise (its explanation and the function to write)")
    p.add_argument("number")
    p = sub.add_parser("start", help="copy an exercise into a directory (default: the current one)")
    p.add_argument("number")
    p.add_argument("--dir", default=".")
    p.add_argument("--force", action="store_true", help="overwrite an existing copy")
    p = sub.add_parser("check", help="check your solution on random ragged shapes")
    p.add_argument("number")
    p.add_argument("--file", help="the file to check (default: the copy `start` made in the current directory)")
    p.add_argument("--device", choices=["cpu", "cuda"], help="default: cuda when torch sees a GPU, else cpu")
    p.add_argument("--shapes", type=int, default=3, help="how many random shapes (default 3)")
    p.add_argument("--seed", type=int, default=0)
    p = sub.add_parser("verify", help="check the reference solutions (all, or the numbers given)")
    p.add_argument("numbers", nargs="*")
    p.add_argument("--device", choices=["cpu", "cuda"])
    p.add_argument("--shapes", type=int, default=3)
    args = ap.parse_args(argv)

    try:
        if args.cmd == "list":
            for pz in PUZZLES:
                print(f"{pz.number:>2}  {pz.title:<50} {pz.entry}({', '.join(pz.sizes)}, ...)")
            return 0
        if args.cmd == "show":
            with open(exercise_path(get(args.number))) as f:
                print(f.read())
            return 0
        if args.cmd == "start":
            pz = get(args.number)
            dest = os.path.join(args.dir, pz.filename)
            if os.path.exists(dest) and not args.force:
                print(f"{dest} exists already (keeping your work); --force overwrites it")
                return 1
            os.makedirs(args.dir, exist_ok=True)
            shutil.copyfile(exercise_path(pz), dest)
            print(f"wrote {dest}; edit it, then run: python -m tilelang.puzzles check {pz.number}"
                  + ("" if os.path.abspath(args.dir) == os.getcwd() else f" --file {dest}"))
            return 0
        from tilelang.puzzles.checker import check
        if args.cmd == "check":
            pz = get(args.number)
            path = args.file or pz.filename
            return 0 if check(pz, path, device=args.device, shapes=args.shapes, seed=args.seed) else 1
        # verify
        chosen = [get(n) for n in args.numbers] or PUZZLES
        failed = [pz.number for pz in chosen
                  if not check(pz, solution_path(pz), device=args.device, shapes=args.shapes)]
        print(f"{len(chosen) - len(failed)}/{len(chosen)} reference solutions pass"
              + (f"; failing: {failed}" if failed else ""))
        return 1 if failed else 0
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
