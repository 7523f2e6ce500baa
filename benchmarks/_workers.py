"""A child process that runs benchmark steps under a hard wall-clock limit.

A compile that hangs inside native code (numba, Rust, C++) cannot be interrupted by a signal,
so each library runs in its own ``spawn``ed worker: ``Worker.call(fn, *args, timeout=s)`` sends
the step, waits at most ``s`` seconds, and on expiry kills the worker (a fresh one starts on the
next call). ``fn`` must be a module-level function taking the worker's state (what ``setup``
returned, e.g. a loaded tokenizer) as its first argument.

Results are ``(status, value)`` with status ``ok`` / ``error`` (value: "Type: message") /
``timeout`` / ``crash`` (value: the exit code).
"""

from __future__ import annotations

import multiprocessing as mp
import time
import traceback
from typing import Any, Callable


def _main(conn, setup: Callable, setup_args: tuple) -> None:
    try:
        state = setup(*setup_args)
    except BaseException as e:  # noqa: BLE001
        conn.send(("setup-error", f"{type(e).__name__}: {e}\n{traceback.format_exc()}"))
        return
    conn.send(("ready", None))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        fn, args = msg
        try:
            conn.send(("ok", fn(state, *args)))
        except Exception as e:  # noqa: BLE001 - a failing step is a result
            text = str(e).strip().splitlines()[0] if str(e).strip() else ""
            conn.send(("error", f"{type(e).__name__}: {text[:300]}"))


class WorkerSetupError(RuntimeError):
    pass


class Worker:
    def __init__(self, setup: Callable, setup_args: tuple = (), setup_timeout: float = 600.0) -> None:
        self.setup = setup
        self.setup_args = setup_args
        self.setup_timeout = setup_timeout
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.conn = None
        self.restarts = 0
        self.setup_s = 0.0  # time of the last setup (model/tokenizer loading)

    def _start(self) -> None:
        parent, child = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_main, args=(child, self.setup, self.setup_args), daemon=True)
        t0 = time.perf_counter()
        self.proc.start()
        child.close()
        self.conn = parent
        if not parent.poll(self.setup_timeout):
            self.kill()
            raise WorkerSetupError(f"worker setup took longer than {self.setup_timeout} s")
        try:
            status, value = parent.recv()
        except EOFError:
            code = self.proc.exitcode
            self.kill()
            raise WorkerSetupError(f"worker died during setup (exit code {code})") from None
        if status != "ready":
            self.kill()
            raise WorkerSetupError(value)
        self.setup_s = time.perf_counter() - t0

    def call(self, fn: Callable, *args: Any, timeout: float) -> tuple[str, Any]:
        if self.proc is None or not self.proc.is_alive():
            if self.proc is not None:
                self.kill()
            self._start()
        assert self.conn is not None
        self.conn.send((fn, args))
        if not self.conn.poll(timeout):
            self.kill()
            self.restarts += 1
            return ("timeout", None)
        try:
            return self.conn.recv()
        except (EOFError, ConnectionResetError):
            self.proc.join(5)
            code = self.proc.exitcode
            self.kill()
            self.restarts += 1
            return ("crash", code)

    def kill(self) -> None:
        if self.proc is not None:
            if self.proc.is_alive():
                self.proc.kill()
            self.proc.join(10)
        if self.conn is not None:
            self.conn.close()
        self.proc = None
        self.conn = None

    def close(self) -> None:
        if self.proc is not None and self.proc.is_alive() and self.conn is not None:
            try:
                self.conn.send(None)
                self.proc.join(10)
            except (BrokenPipeError, OSError):
                pass
        self.kill()

    def __enter__(self) -> "Worker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
