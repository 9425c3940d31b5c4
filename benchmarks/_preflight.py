"""Crash guard for our own package: try each operation once, on tiny inputs, in a child process.

A bug in a C extension can kill the interpreter (segfault, abort) instead of raising, which
would end the whole report. Operations that kill (or hang) the child are disabled in the main
run and reported as "error: ..." cells. Ordinary exceptions are left to the main run, which
reports them itself. Only small inputs are tried, so this catches most but not all crashes.

Run as a script it is the child: ``python _preflight.py OP [OP ...]`` prints ``done OP``
after each operation that returned or raised.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable

import numpy as np

HERE = Path(__file__).resolve().parent


def _examples(c: Any) -> dict[str, Callable[[], object]]:
    x = np.linspace(-3, 3, 37, dtype=np.float32)
    a, b = c.from_f32(x), c.from_f32(x[::-1].copy())
    m1, m2 = c.from_f32(np.ones((5, 7), np.float32)), c.from_f32(np.ones((7, 3), np.float32))
    v = c.from_f32(np.ones(7, np.float32))
    return {
        "cast_into": lambda: (c.cast_into(c.empty(37), x), c.cast_into(c.empty_f32(37), a)),
        "add": lambda: c.add(a, b, c.empty(37)),
        "multiply": lambda: c.multiply(a, b, c.empty(37)),
        "exp": lambda: c.exp(a, c.empty(37)),
        "exp_value": lambda: c.exp_value(a),
        "sum": lambda: c.sum(a),
        "mean": lambda: c.mean(a),
        "std": lambda: c.std(a),
        "sort": lambda: c.sort(a),
        "argsort": lambda: c.argsort(a),
        "dot": lambda: c.dot(a, b),
        "matmul": lambda: (c.matmul(m1, m2), c.matmul(m1, v)),
        "package_matmul": lambda: (
            c.package_matmul(m1, m2),
            c.package_matmul(m1, v),
            c.package_matmul(m1, m2, out_dtype=np.float32),
        ),
    }


# Contender method -> what the user would call it.
GUARDED_OPS = {
    "cast_into": "casts to/from float32",
    "add": "np.add",
    "multiply": "np.multiply",
    "exp": "np.exp(out=)",
    "exp_value": "np.exp",
    "sum": "np.sum",
    "mean": "np.mean",
    "std": "np.std",
    "sort": "np.sort",
    "argsort": "np.argsort",
    "dot": "np.dot",
    "matmul": "a @ b",
    "package_matmul": "bfloat16_dtype.matmul",
}


def _describe_exit(code: int) -> str:
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def find_crashing_ops(timeout: float = 60.0) -> dict[str, str]:
    """{operation: reason} for each of our operations that kills or hangs a child interpreter."""
    pending, crashed = list(GUARDED_OPS), {}
    while pending:
        try:
            proc = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), *pending],
                capture_output=True,
                text=True,
                timeout=timeout,
                cwd=HERE,
            )
            stdout, failure = proc.stdout, None if proc.returncode == 0 else _describe_exit(proc.returncode)
        except subprocess.TimeoutExpired as exc:
            out = exc.stdout or ""
            stdout = out.decode() if isinstance(out, bytes) else out
            failure = f"did not finish within {timeout:.0f} s"
        done = {line.split(" ", 1)[1] for line in stdout.splitlines() if line.startswith("done ")}
        if failure is None:
            break
        remaining = [op for op in pending if op not in done]
        if not remaining:  # died after the last operation (e.g. at exit): nothing to blame
            break
        culprit = remaining[0]
        crashed[culprit] = f"{GUARDED_OPS[culprit]} crashed a test process on tiny inputs ({failure})"
        pending = remaining[1:]
    return crashed


def _child(ops: list[str]) -> None:
    sys.path.insert(0, str(HERE))
    from _contenders import OursContender

    c = OursContender()
    if not c.available:
        return  # nothing to guard; the main run reports the import error
    examples = _examples(c)
    for op in ops:
        try:
            examples[op]()
        except Exception:  # noqa: BLE001 -- exceptions are the main run's business
            pass
        print(f"done {op}", flush=True)


if __name__ == "__main__":
    _child(sys.argv[1:])
