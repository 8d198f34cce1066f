"""A progress bar: tqdm when installed, else a short line on stderr."""
from __future__ import annotations

import os
import sys
import time


def enabled():
    return os.environ.get("TILELANG_AUTO_TUNING_PROGRESS", "1").lower() not in ("0", "false", "no", "off")


class Progress:
    def __init__(self, total, desc):
        self.total, self.desc, self.n = total, desc, 0
        self.failed = 0
        self._bar = None
        self._last = 0.0
        self._on = enabled() and total > 0
        if not self._on:
            return
        try:
            from tqdm.auto import tqdm
            self._bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=True, dynamic_ncols=True)
        except ImportError:
            self._tty = sys.stderr.isatty()
            self._line()

    def update(self, ok=True, info=None):
        self.n += 1
        self.failed += 0 if ok else 1
        if not self._on:
            return
        if self._bar is not None:
            self._bar.update(1)
            if info:
                self._bar.set_postfix_str(info, refresh=False)
            return
        now = time.monotonic()
        if self._tty or self.n == self.total or now - self._last > 5.0:
            self._line(info)

    def _line(self, info=None):
        self._last = time.monotonic()
        fail = f", {self.failed} failed" if self.failed else ""
        text = f"[tilelang.autotune] {self.desc}: {self.n}/{self.total}{fail}" + (f" ({info})" if info else "")
        if getattr(self, "_tty", False):
            end = "\n" if self.n == self.total else ""
            sys.stderr.write("\r" + text + end)
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def close(self):
        if self._bar is not None:
            self._bar.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
