"""The process that runs documents for the language server. A document's module-level code
is the user's (imports, factories, anything): it runs here, in a child process, so that an
endless loop, `sys.exit`, a crash in an extension or a leak never reaches the server. The
server sends one JSON request per line and reads one JSON answer per line; past its time
limit (plus a grace period) the process is killed and started again.

    request  {"op": "analyze", "path": ..., "text": ...}   -> Analysis.to_dict()
             {"op": "lower", "path": ..., "target": ...}   -> Lowered.to_dict() (the last analysis)
             {"op": "forget", "path": ...}                 -> {}
    answer   {"ok": {...}} | {"error": "traceback text"}; "recycle": true after a time-out"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
import traceback


class WorkerError(RuntimeError):
    """The worker timed out or stopped; the message says which (for a diagnostic)."""


# ----------------------------------------------------------------- the child process

def _protocol_streams():
    """The pipes to the server, moved off fds 0/1 so that the document's own `print` and
    `input` cannot corrupt the protocol."""
    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDWR)
    os.dup2(null, 0)
    os.dup2(null, 1)
    sys.stdin = open(os.devnull)
    sys.stdout = open(os.devnull, "w")
    return proto_in, proto_out


def serve(time_limit: float):
    proto_in, proto_out = _protocol_streams()
    from tilelang.lsp.analysis import AnalysisTimeout, _time_limit, analyze
    from tilelang.lsp.layouts import lower_kernels
    import tilelang.backend.cuda.emit.module  # noqa: F401 - imported now, not in the first hover
    last = {}   # path -> (text, traced PrimFuncs)
    proto_out.write(b'{"ready": true}\n')
    proto_out.flush()
    for line in proto_in:
        req = json.loads(line)
        op, path = req.get("op"), req.get("path")
        ans = {}
        try:
            if op == "analyze":
                a = analyze(req["text"], path, time_limit)
                last[path] = (req["text"], a.funcs)
                ans["ok"] = a.to_dict()
                ans["recycle"] = any(d.code == "AnalysisTimeout" for d in a.diagnostics)
            elif op == "lower":
                text, funcs = last.get(path, ("", []))
                with _time_limit(time_limit):
                    ans["ok"] = lower_kernels(funcs, text, path, req.get("target")).to_dict()
            elif op == "forget":
                last.pop(path, None)
                ans["ok"] = {}
            else:
                ans["error"] = f"unknown op {op!r}"
        except AnalysisTimeout as e:
            ans = {"error": str(e), "recycle": True}
        except BaseException:  # noqa: BLE001 - reported to the server, which logs it
            ans = {"error": traceback.format_exc()}
        proto_out.write(json.dumps(ans).encode() + b"\n")
        proto_out.flush()
        if ans.get("recycle"):
            return   # interrupted code may have left state behind: a fresh process next time


# ----------------------------------------------------------------- the server's side

class Worker:
    """The server's handle on the child process: one request at a time, each with a
    deadline; a process that misses it, or dies, is replaced on the next request."""

    def __init__(self, time_limit: float = 10.0, grace: float | None = None):
        from tilelang.lsp.analysis import IMPORT_ALLOWANCE
        if grace is None:   # the child's own limit comes first; this catches code stuck outside Python
            grace = IMPORT_ALLOWANCE + 5.0
        self.time_limit, self.grace = time_limit, grace
        self.proc = None
        self.lines = None
        self.lock = threading.Lock()

    def _start(self):
        env = dict(os.environ)
        root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # above tilelang/
        env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
        self.proc = subprocess.Popen([sys.executable, "-m", "tilelang.lsp.worker", str(self.time_limit)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env)
        self.lines = queue.Queue()
        threading.Thread(target=self._read, args=(self.proc, self.lines), daemon=True).start()
        self._answer(self.time_limit + 60)   # {"ready": true} once tilelang is imported

    @staticmethod
    def _read(proc, lines):
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)

    def _answer(self, timeout):
        try:
            line = self.lines.get(timeout=timeout)
        except queue.Empty:
            self.stop()
            raise WorkerError(f"the document's code did not finish within {timeout:g} s (stopped)") from None
        if line is None:
            code = self.proc.wait()
            self.proc = None
            raise WorkerError(f"the process running the document stopped (exit code {code})")
        return json.loads(line)

    def start(self):
        """Start the process now (it imports tilelang: seconds), not at the first request."""
        with self.lock:
            if self.proc is None:
                self._start()

    def request(self, op, **kw) -> dict:
        with self.lock:
            if self.proc is None or self.proc.poll() is not None:
                self._start()
            try:
                self.proc.stdin.write(json.dumps(dict(kw, op=op)).encode() + b"\n")
                self.proc.stdin.flush()
            except BrokenPipeError:   # it died since: read its exit code below
                pass
            ans = self._answer(self.time_limit + self.grace)
            if ans.get("recycle"):
                self.proc.wait(timeout=self.grace)
                self.proc = None
            if "error" in ans:
                raise WorkerError(ans["error"])
            return ans["ok"]

    def stop(self):
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


if __name__ == "__main__":
    serve(float(sys.argv[1]) if len(sys.argv) > 1 else 10.0)
