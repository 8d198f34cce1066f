"""Run a call under a deadline."""
from __future__ import annotations

import signal
import threading


class TuneTimeout(Exception):
    pass


def run_with_timeout(fn, timeout, *args, **kwargs):
    """`fn(*args, **kwargs)`, raising `TuneTimeout` after `timeout` seconds.

    In the main thread of a POSIX process a SIGALRM timer interrupts the call at the
    next Python bytecode (a blocked C call, e.g. a running CPU kernel, finishes
    first); elsewhere the call runs on a daemon thread that is abandoned when the
    deadline passes."""
    if not timeout or timeout <= 0:
        return fn(*args, **kwargs)
    if hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread():
        def on_alarm(signum, frame):
            raise TuneTimeout(f"timed out after {timeout:g} s")
        prev = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, float(timeout))
        try:
            return fn(*args, **kwargs)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, prev)
    box = {}

    def target():
        try:
            box["value"] = fn(*args, **kwargs)
        except BaseException as e:  # noqa: BLE001 - re-raised in the caller
            box["error"] = e
    t = threading.Thread(target=target, daemon=True, name="tilelang-tune-call")
    t.start()
    t.join(timeout)
    if t.is_alive():
        raise TuneTimeout(f"timed out after {timeout:g} s")
    if "error" in box:
        raise box["error"]
    return box.get("value")
