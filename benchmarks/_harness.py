"""Shared machinery for the benchmark suite.

- timing: a warm-up call, then the median of an adaptive number of repeats (calls shorter
  than BATCH_SAMPLE in timeit-style batches), in rounds that alternate the contenders' order
  (best_round_cells);
- the result model (Cell, Row, Section) that every area fills in;
- rendering of sections as aligned Markdown tables (the terminal shows the same text);
- machine details (CPU, cores, BLAS, thread settings, measured copy bandwidth);
- a progress bar (tqdm when installed, plain lines otherwise).

Nothing in this module knows about a particular dtype; the contenders live in ``_contenders.py``.
"""

from __future__ import annotations

import dataclasses
import math
import os
import platform
import statistics
import sys
import time
from typing import Any, Callable, Iterable, Iterator

import numpy as np

OURS = "ours"  # column key of bfloat16_dtype; every speedup is relative to it

# --------------------------------------------------------------------------------------------
# Configuration shared by all areas
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Settings:
    """What a run measures and how hard it tries."""

    quick: bool = False
    sizes: list[int] | None = None  # --sizes override (element counts, or n for matmul)
    threads: int | None = None
    budget: float = 0.25  # seconds of timed repeats per cell (after warm-up)
    max_repeats: int = 50
    min_repeats: int = 3
    slow_call: float = 1.0  # a call slower than this gets a single timed repeat
    max_call: float = 3.0  # skip a cell whose estimated call time exceeds this
    seed: int = 0
    # each row times its contenders in this many rounds, alternating their order, and keeps
    # each contender's fastest round (best_round_cells): a slow phase of the machine then
    # lands in one round of every contender instead of in one contender's only measurement
    rounds: int = 2

    @classmethod
    def for_mode(cls, quick: bool, **kwargs: Any) -> "Settings":
        if quick:
            return cls(quick=True, budget=0.01, max_repeats=10, slow_call=0.2, max_call=0.5, rounds=1,
                       **kwargs)
        return cls(quick=False, **kwargs)

    def per_round(self) -> "Settings":
        """The settings of one of the ``rounds``: the cell's time budget shared among them."""
        return dataclasses.replace(self, budget=self.budget / max(self.rounds, 1))

    def pick_sizes(self, full: list[int], quick: list[int]) -> list[int]:
        if self.sizes:
            return list(self.sizes)
        return list(quick if self.quick else full)


# --------------------------------------------------------------------------------------------
# Timing
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Timing:
    seconds: float  # median of the timed repeats
    repeats: int
    spread: float  # (max - min) / median of the timed repeats, a rough noise indicator


QUIET_WINDOW = 0.02  # seconds per look at the other threads' CPU use (several time slices)
QUIET_SHARE = 0.05  # "quiet": the other threads together use less than this share of one core
QUIET_MAX_WAIT = 2.0  # give up waiting after this long (a pool that never sleeps)


def wait_for_quiet_threads(max_wait: float = QUIET_MAX_WAIT) -> float:
    """Wait until the process's other threads stop using the CPU; return the seconds waited.

    Thread pools keep running after a call returns: OpenBLAS's workers spin for about 2^28
    cycles (~0.1 s) after each BLAS call, OpenMP's for a few milliseconds. Timed right after a
    float32 BLAS call, a multithreaded contender shares a core with that spinning worker and
    reads up to twice as slow. The other threads' CPU time is the process's CPU time minus the
    calling thread's, sampled over short windows while this thread sleeps.
    """
    start = time.perf_counter()
    while True:
        p0, t0, w0 = time.process_time(), time.thread_time(), time.perf_counter()
        time.sleep(QUIET_WINDOW)
        p1, t1, w1 = time.process_time(), time.thread_time(), time.perf_counter()
        others = (p1 - p0) - (t1 - t0)
        if others < QUIET_SHARE * (w1 - w0) or w1 - start >= max_wait:
            return w1 - start


BATCH_SAMPLE = 2e-4  # seconds: a call shorter than this is timed in batches lasting about this long
WARM_AGAIN = 0.1  # seconds: a first call shorter than this is followed by three more warm-up calls


def measure(fn: Callable[[], object], settings: Settings) -> Timing:
    """Warm up once, then time ``fn`` repeatedly and return the median time of one call.

    The repeat count adapts to the call's time so that each cell costs about
    ``settings.budget`` seconds; calls slower than ``settings.slow_call`` are timed once.
    A call shorter than BATCH_SAMPLE (arrays of 10^4 elements take about a microsecond) is
    timed as timeit does: each sample is a batch of back-to-back calls lasting about
    BATCH_SAMPLE, divided by the batch's size, so that the clock's own cost (~0.1 us a
    reading) and a single call disturbed by an interrupt stay out of the figure.
    It first waits for other thread pools of the process to go idle (wait_for_quiet_threads),
    so that each contender runs undisturbed by the one timed before it.
    """
    wait_for_quiet_threads()
    start = time.perf_counter()
    fn()
    warm = time.perf_counter() - start
    batch = 1
    if warm < WARM_AGAIN:
        # the first call also warmed caches and woke the callee's sleeping thread pool (a
        # multithreaded BLAS: tens of ms on a busy machine, which sized a 0.1 ms GEMM's cell
        # as three cold calls): the fastest of the next three says what a call costs (one
        # preempted call made batches of 1-2 calls)
        timed = []
        for _ in range(3):
            start = time.perf_counter()
            fn()
            timed.append(time.perf_counter() - start)
        warm = min(timed)
    if warm < BATCH_SAMPLE:
        batch = max(1, int(BATCH_SAMPLE / max(warm, 1e-7)))
    if warm >= settings.slow_call:
        repeats = 1
    else:
        repeats = int(settings.budget / max(warm * batch, 1e-7))
        repeats = max(settings.min_repeats, min(settings.max_repeats, repeats))
    calls = range(batch)
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in calls:
            fn()
        samples.append((time.perf_counter() - start) / batch)
    median = statistics.median(samples)
    spread = (max(samples) - min(samples)) / median if median > 0 else 0.0
    return Timing(median, repeats, spread)


# --------------------------------------------------------------------------------------------
# Result model
# --------------------------------------------------------------------------------------------


@dataclasses.dataclass
class Cell:
    """One contender's result for one row.

    ``status`` is "ok", "error", "not installed", "skipped" or "n/a"; ``text`` is what the
    table shows. Speed cells carry ``seconds`` (and ``rate`` in the section's rate unit),
    accuracy cells carry ``value`` (an error or a computed result).
    """

    text: str
    status: str = "ok"
    seconds: float | None = None
    rate: float | None = None
    value: float | None = None
    repeats: int | None = None
    message: str | None = None

    @classmethod
    def timing(cls, t: Timing, rate: float | None = None, rate_unit: str | None = None) -> "Cell":
        text = format_seconds(t.seconds)
        if rate is not None and rate_unit:
            text += f" ({format_rate(rate)} {rate_unit})"
        return cls(text, seconds=t.seconds, rate=rate, repeats=t.repeats)

    @classmethod
    def number(cls, value: float, text: str | None = None) -> "Cell":
        return cls(text if text is not None else format_number(value), value=float(value))

    @classmethod
    def error(cls, exc: BaseException | str) -> "Cell":
        message = exc if isinstance(exc, str) else f"{type(exc).__name__}: {exc}"
        message = " ".join(str(message).split())  # one line, whatever the exception said
        return cls(f"error: {shorten(message, 100)}", status="error", message=message)

    @classmethod
    def missing(cls, status: str) -> "Cell":
        """A contender that is not installed (or failed to import)."""
        if status.startswith("error"):
            return cls(shorten(status, 107), status="error", message=status)
        return cls(status, status="not installed")

    @classmethod
    def skipped(cls, reason: str) -> "Cell":
        return cls(f"skipped ({reason})", status="skipped", message=reason)

    @classmethod
    def not_applicable(cls, reason: str = "") -> "Cell":
        return cls("—", status="n/a", message=reason or None)

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in dataclasses.asdict(self).items() if v is not None}


@dataclasses.dataclass
class Column:
    key: str
    label: str


@dataclasses.dataclass
class Row:
    operation: str
    size: str
    cells: dict[str, Cell]
    speedup: dict[str, float | None] = dataclasses.field(default_factory=dict)
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "operation": self.operation,
            "size": self.size,
            "cells": {k: c.to_json() for k, c in self.cells.items()},
            "speedup": self.speedup,
        }
        if self.note:
            out["note"] = self.note
        return out


@dataclasses.dataclass
class Task:
    """A unit of work for the progress bar: computes one row of a section."""

    label: str
    run: Callable[[], Row]


# The closing sentences of the single-thread speed tables' notes (Section.one_thread).
ONE_THREAD_NOTE = (
    "Every contender runs on one thread here, as numpy's loops do "
    "(torch: `torch.set_num_threads(1)` while this table is measured). "
    "Speedup = their time ÷ our time; above 1 means bfloat16_dtype is faster."
)


@dataclasses.dataclass
class Section:
    """One table of the report.

    ``ratio_columns`` lists the contenders the speedup columns compare against: for each
    key ``k`` a column "speedup vs k" = time(k) / time(ours). Sections of values (accuracy,
    memory) leave it empty.
    """

    key: str
    title: str
    note: str
    columns: list[Column]
    ratio_columns: list[Column] = dataclasses.field(default_factory=list)
    rows: list[Row] = dataclasses.field(default_factory=list)
    tasks: list[Task] = dataclasses.field(default_factory=list)
    rate_unit: str | None = None  # unit of Cell.rate in this section, e.g. "GFLOP/s"
    show_rate: bool = True  # print the rate beside the time in the table
    # run every contender on one thread while this table is measured (torch would otherwise
    # spread elementwise calls over its intra-op threads; numpy's own loops use one)
    one_thread: bool = False

    def add(self, label: str, run: Callable[[], Row]) -> None:
        self.tasks.append(Task(f"{self.key}: {label}", run))

    def fill_speedups(self, row: Row) -> None:
        ours = row.cells.get(OURS)
        for col in self.ratio_columns:
            other = row.cells.get(col.key)
            value = None
            if ours and other and ours.seconds and other.seconds:
                value = other.seconds / ours.seconds
            row.speedup[col.key] = value

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "note": self.note,
            "rate_unit": self.rate_unit,
            "columns": [dataclasses.asdict(c) for c in self.columns],
            "speedup_columns": [c.key for c in self.ratio_columns],
            "rows": [r.to_json() for r in self.rows],
        }


class Skip(Exception):
    """Raised by a cell's setup to skip it (e.g. too slow at this size); the message says why."""


def best_round_cells(keys: list[str], measure_key: Callable[[str], Cell], rounds: int) -> dict[str, Cell]:
    """``measure_key(key)`` for every key in ``rounds`` rounds, the order reversed in every other
    round; per key, the round with the least time (a key whose cell is not a timing keeps its
    first round's cell, and is not measured again)."""
    best: dict[str, Cell] = {}
    for r in range(max(rounds, 1)):
        for key in keys if r % 2 == 0 else list(reversed(keys)):
            if key in best and best[key].seconds is None:
                continue
            cell = measure_key(key)
            old = best.get(key)
            if old is None or (cell.seconds is not None and cell.seconds < old.seconds):
                best[key] = cell
    return best


def run_cell(fn: Callable[[], Cell]) -> Cell:
    """Run one contender's measurement; any exception becomes an "error: ..." cell."""
    try:
        return fn()
    except Skip as exc:
        return Cell.skipped(str(exc))
    except Exception as exc:  # noqa: BLE001 -- the report must survive any failing op
        return Cell.error(exc)


@dataclasses.dataclass
class Context:
    """Everything an area needs: the settings, the contenders and shared input data."""

    settings: Settings
    contenders: list[Any]
    copy_gbs: float = float("nan")
    isa: bool = False  # --isa: also time the matmul kernels of every supported ISA tier
    _cache: dict[Any, np.ndarray] = dataclasses.field(default_factory=dict)

    def contender(self, key: str) -> Any:
        return next(c for c in self.contenders if c.key == key)

    def columns(self) -> list[Column]:
        return [Column(c.key, c.label) for c in self.contenders]

    def ratio_columns(self) -> list[Column]:
        return [Column(c.key, c.label) for c in self.contenders if c.key in ("float32", "ml_dtypes")]

    def uniform_f32(self, n: int, salt: int = 0) -> np.ndarray:
        """n float32 values uniform in [0, 1), reproducible, cached (largest sizes dominate memory)."""
        key = ("u32", n, salt)
        if key not in self._cache:
            for stale in [k for k in self._cache if k[1] != n]:
                del self._cache[stale]  # keep only the current size's inputs alive
            rng = np.random.default_rng([self.settings.seed, salt, n])
            self._cache[key] = rng.random(n, dtype=np.float32)
        return self._cache[key]

    def rng(self, *salt: int) -> np.random.Generator:
        return np.random.default_rng([self.settings.seed, *salt])


def speed_row(
    ctx: Context,
    section: Section,
    operation: str,
    size: str,
    setup: Callable[[Any], Callable[[], object]],
    work: float | Callable[[Any], float] | None = None,
    contenders: list[Any] | None = None,
) -> Row:
    """Time one operation for every contender.

    ``setup(contender)`` prepares the inputs and returns the zero-argument call to time;
    ``work`` (bytes, flops, ...; or a function of the contender giving it) divided by the
    time gives the cell's rate, in units of 1e9 ``section.rate_unit``.
    """
    cells: dict[str, Cell] = {}
    available = {}
    for c in contenders if contenders is not None else ctx.contenders:
        if not c.available:
            cells[c.key] = Cell.missing(c.status)
        else:
            available[c.key] = c
    settings = ctx.settings.per_round()

    def one(key: str) -> Cell:
        def timed() -> Cell:
            c = available[key]
            fn = setup(c)
            t = measure(fn, settings)
            amount = work(c) if callable(work) else work
            rate = amount / t.seconds / 1e9 if amount else None
            return Cell.timing(t, rate, section.rate_unit if section.show_rate else None)

        return run_cell(timed)

    cells.update(best_round_cells(list(available), one, ctx.settings.rounds))
    cells = {c.key: cells[c.key] for c in (contenders if contenders is not None else ctx.contenders)}
    row = Row(operation, size, cells)
    section.fill_speedups(row)
    return row


# --------------------------------------------------------------------------------------------
# Formatting
# --------------------------------------------------------------------------------------------


def shorten(text: str, width: int) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def format_seconds(s: float) -> str:
    if s >= 1:
        return f"{s:.2f} s"
    if s >= 1e-3:
        return f"{s * 1e3:.3g} ms"
    if s >= 1e-6:
        return f"{s * 1e6:.3g} µs"
    return f"{s * 1e9:.3g} ns"


def format_rate(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}"
    if x >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def format_number(x: float) -> str:
    if x is None:
        return "—"
    if math.isnan(x):
        return "nan"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if x == 0:
        return "0"
    if x == int(x) and abs(x) < 1e9:
        return f"{int(x)}"
    return f"{x:.4g}" if 1e-3 <= abs(x) < 1e6 else f"{x:.3e}"


def format_bytes(n: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n:.0f} B"


def format_count(n: int) -> str:
    """2^24 for powers of two, 1e8 for powers of ten, else the number."""
    if n > 0 and n & (n - 1) == 0 and n >= 1024:
        return f"2^{n.bit_length() - 1}"
    exponent = math.log10(n) if n > 0 else 0
    if n >= 1000 and exponent == int(exponent):
        return f"1e{int(exponent)}"
    return str(n)


def format_speedup(x: float | None) -> str:
    return "—" if x is None else f"{x:.2f}×"


def escape_md(text: str) -> str:
    return text.replace("|", "\\|")


def markdown_table(header: list[str], rows: list[list[str]]) -> str:
    """An aligned pipe table: valid Markdown, and readable as plain text in a terminal."""
    header = [escape_md(h) for h in header]
    rows = [[escape_md(c) for c in r] for r in rows]
    widths = [max([len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(header)]

    def line(cells: list[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths)) + " |"

    sep = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([line(header), sep] + [line(r) for r in rows])


def render_section(section: Section) -> str:
    header = ["operation", "size"] + [c.label for c in section.columns]
    header += [f"speedup vs {c.label}" for c in section.ratio_columns]
    body = []
    for row in section.rows:
        cells = [row.cells[c.key].text if c.key in row.cells else "—" for c in section.columns]
        ratios = [format_speedup(row.speedup.get(c.key)) for c in section.ratio_columns]
        body.append([row.operation, row.size] + cells + ratios)
    parts = [f"## {section.title}", "", section.note.strip(), "", markdown_table(header, body)]
    notes = [f"- {r.operation} ({r.size}): {r.note}" for r in section.rows if r.note]
    if notes:
        parts += ["", *notes]
    return "\n".join(parts)


# --------------------------------------------------------------------------------------------
# Machine details
# --------------------------------------------------------------------------------------------

THREAD_ENV_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "BFLOAT16_DTYPE_NUM_THREADS",
)


def first_processor(cpuinfo: str | None = None) -> dict[str, str]:
    """The fields of the first processor in /proc/cpuinfo (or in the text given), by name; empty
    where there is no /proc/cpuinfo."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8") as fh:
                cpuinfo = fh.read()
        except OSError:
            return {}
    fields: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            break  # the first processor only
        key, _, value = line.partition(":")
        fields.setdefault(key.strip().lower(), value.strip())
    return fields


def cpu_model() -> str:
    model = first_processor().get("model name")
    if model:
        return model
    if sys.platform == "darwin":
        try:
            import subprocess

            out = subprocess.run(
                ["sysctl", "-n", "machdep.cpu.brand_string"], capture_output=True, text=True, timeout=5
            )
            if out.stdout.strip():
                return out.stdout.strip()
        except (OSError, subprocess.SubprocessError):
            pass
    return platform.processor() or platform.machine() or "unknown"


# x86 (vendor, family, first model, last model) -> core, from the vendors' model numbers: the
# "model name" of a VM often says no more than "AMD EPYC", and Zen 4 runs 512-bit vdpbf16ps at half
# Zen 5's rate, so the two read very differently in the matmul tables.
CORE_NAMES = (
    ("AuthenticAMD", 0x19, 0x00, 0x0F, "Zen 3"),
    ("AuthenticAMD", 0x19, 0x10, 0x1F, "Zen 4"),
    ("AuthenticAMD", 0x19, 0x20, 0x2F, "Zen 3"),
    ("AuthenticAMD", 0x19, 0x40, 0x5F, "Zen 3"),
    ("AuthenticAMD", 0x19, 0x60, 0x7F, "Zen 4"),
    ("AuthenticAMD", 0x19, 0xA0, 0xAF, "Zen 4c"),
    ("AuthenticAMD", 0x1A, 0x00, 0xFF, "Zen 5"),
    ("GenuineIntel", 6, 0x6A, 0x6A, "Ice Lake-SP"),
    ("GenuineIntel", 6, 0x8F, 0x8F, "Sapphire Rapids"),
    ("GenuineIntel", 6, 0xCF, 0xCF, "Emerald Rapids"),
    ("GenuineIntel", 6, 0xAD, 0xAE, "Granite Rapids"),
)


def cpu_core(cpuinfo: str | None = None) -> str:
    """The CPU's vendor family and model as /proc/cpuinfo gives them, with the core's name where
    CORE_NAMES knows it: "family 25, model 17 (Zen 4)"; "" where there is no /proc/cpuinfo."""
    fields = first_processor(cpuinfo)
    try:
        family, model = int(fields["cpu family"]), int(fields["model"])
    except (KeyError, ValueError):
        return ""
    vendor = fields.get("vendor_id", "")
    text = f"family {family}, model {model}"
    for v, f, lo, hi, name in CORE_NAMES:
        if v == vendor and f == family and lo <= model <= hi:
            return f"{text} ({name})"
    return text


def cpu_flags() -> list[str]:
    """The SIMD features that matter for 16-bit kernels, as the OS reports them."""
    wanted = ("avx2", "fma", "f16c", "avx512f", "avx512_bf16", "avx512bw", "amx_bf16", "avx_vnni")
    flags = set(first_processor().get("flags", "").split())
    return [f for f in wanted if f in flags]


def blas_description() -> str:
    try:
        config = np.show_config(mode="dicts")  # numpy >= 2
        blas = config["Build Dependencies"]["blas"]
        return f"{blas.get('name', '?')} {blas.get('version', '')}".strip()
    except Exception:  # noqa: BLE001 -- older numpy: fall back below
        return "unknown"


def threadpool_description() -> list[str]:
    try:
        import threadpoolctl
    except ImportError:
        return ["threadpoolctl not installed"]
    lines = []
    for pool in threadpoolctl.threadpool_info():
        lines.append(
            f"{pool.get('internal_api')} {pool.get('version') or ''} "
            f"({pool.get('user_api')}, {pool.get('threading_layer', '?')} threading, "
            f"arch {pool.get('architecture', '?')}): {pool.get('num_threads')} threads"
        )
    return lines or ["no native thread pools detected"]


def load_average() -> list[float] | None:
    """1/5/15-minute load averages: other busy processes make timings noisy, so report them."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def copy_bandwidth(n_elements: int, settings: Settings) -> float:
    """GB/s of np.copyto on float32 arrays, counting bytes read plus bytes written."""
    src = np.random.default_rng(settings.seed).random(n_elements, dtype=np.float32)
    dst = np.empty_like(src)
    t = measure(lambda: np.copyto(dst, src), settings)
    return 2 * src.nbytes / t.seconds / 1e9


def machine_info(settings: Settings, contenders: Iterable[Any], bandwidth: float) -> dict[str, Any]:
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = None
    info: dict[str, Any] = {
        "cpu": cpu_model(),
        "cpu_core": cpu_core(),
        "cpu_flags": cpu_flags(),
        "logical_cores": os.cpu_count(),
        "usable_cores": affinity,
        "os": f"{platform.system()} {platform.release()} ({platform.machine()})",
        "python": platform.python_version(),
        "numpy": np.__version__,
        "blas": blas_description(),
        "thread_pools": threadpool_description(),
        "thread_env": {k: os.environ[k] for k in THREAD_ENV_VARS if k in os.environ},
        "threads_option": settings.threads,
        "load_average": load_average(),
        "copy_bandwidth_gbs": bandwidth,
        "contenders": {c.key: c.describe() for c in contenders},
    }
    return info


class CpuUsageByOthers:
    """How much CPU other processes used while we ran (Linux: /proc/stat minus our own CPU time).

    Multi-threaded kernels (BLAS, ours, torch) lose whole time slices when another process holds
    a core, so this is reported and turned into a warning when it is significant.
    """

    def __init__(self) -> None:
        self.start = (self._machine_busy(), self._own(), time.perf_counter())

    @staticmethod
    def _machine_busy() -> float | None:
        try:
            with open("/proc/stat", encoding="ascii") as fh:
                fields = [int(v) for v in fh.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
        return (sum(fields[:8]) - idle) / os.sysconf("SC_CLK_TCK")

    @staticmethod
    def _own() -> float:
        t = os.times()
        return t.user + t.system + t.children_user + t.children_system

    def average_cores(self) -> float | None:
        """Average number of cores kept busy by other processes since construction."""
        busy0, own0, wall0 = self.start
        busy1, own1, wall1 = self._machine_busy(), self._own(), time.perf_counter()
        if busy0 is None or busy1 is None or wall1 <= wall0:
            return None
        return max(0.0, ((busy1 - busy0) - (own1 - own0)) / (wall1 - wall0))


def busy_warning(info: dict[str, Any]) -> str | None:
    """A warning when other processes competed for the CPUs before or during the run."""
    load, cores = info.get("load_average"), info.get("usable_cores") or info.get("logical_cores")
    others = info.get("other_processes_cores")
    reasons = []
    if load and cores and load[0] >= 0.75 * cores:
        reasons.append(f"1-minute load average {load[0]:g} on {cores} cores at the start")
    if others is not None and others >= 0.2:
        reasons.append(f"other processes kept {others:.2f} cores busy on average during the run")
    if not reasons:
        return None
    return (
        f"**Warning:** the machine was busy ({'; '.join(reasons)}). Timings, multi-threaded ones "
        "especially, are noisy; re-run on an idle machine for numbers worth quoting."
    )


def render_machine(info: dict[str, Any]) -> str:
    env = ", ".join(f"{k}={v}" for k, v in info["thread_env"].items()) or "none set"
    cores = f"{info['logical_cores']} logical"
    if info.get("usable_cores") and info["usable_cores"] != info["logical_cores"]:
        cores += f", {info['usable_cores']} usable by this process"
    lines = [
        f"- CPU: {info['cpu']}{'; ' + info['cpu_core'] if info.get('cpu_core') else ''}; {cores}; "
        f"SIMD: {', '.join(info['cpu_flags']) or 'unknown'}",
        f"- OS: {info['os']}; Python {info['python']}; NumPy {info['numpy']} with BLAS {info['blas']}",
        f"- Thread pools: {'; '.join(info['thread_pools'])}",
        f"- Thread settings: --threads {info['threads_option'] or 'not given (library defaults)'}; "
        f"environment: {env}",
        f"- Load average at start (1/5/15 min): "
        f"{', '.join(map(str, info['load_average'])) if info.get('load_average') else 'unknown'}"
        " (a load near the core count means other processes competed for the CPU)",
        f"- Measured copy bandwidth (np.copyto, float32, read + write): "
        f"{info['copy_bandwidth_gbs']:.1f} GB/s",
    ]
    if info.get("other_processes_cores") is not None:
        lines.append(
            f"- CPU used by other processes during the run: {info['other_processes_cores']:.2f} cores "
            "on average"
        )
    # OPENBLAS_CORETYPE & co.: removed by run.py (the usual case) or kept with --keep-blas-env
    blas_env_lines = {
        "blas_env_removed": "were set in the environment (they fix OpenBLAS's kernel to that core type) "
        "and were removed for this run, so float32 runs on OpenBLAS's best kernel for this CPU "
        "(the thread-pool line above shows the kernel threadpoolctl reports); the table *float32 "
        "BLAS with and without the forced core type* shows both",
        "blas_env_kept": "kept (--keep-blas-env): float32 runs on the kernel they force, not "
        "necessarily OpenBLAS's best for this CPU",
    }
    for key, what in blas_env_lines.items():
        env = info.get(key) or {}
        if env:
            shown = ", ".join(f"{k}={v}" for k, v in env.items())
            lines.append(f"- float32 BLAS: {shown} {what}")
    for key, desc in info["contenders"].items():
        lines.append(f"- Contender `{key}`: {desc}")
    for reason in info.get("crashing_operations", {}).values():
        lines.append(f"- Disabled for this run: {reason}")
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Progress
# --------------------------------------------------------------------------------------------


def progress(tasks: list[Task], enabled: bool = True) -> Iterator[Task]:
    """Yield tasks while showing progress on stderr (tqdm if installed, else plain lines)."""
    if not enabled:
        yield from tasks
        return
    try:
        from tqdm import tqdm
    except ImportError:
        tqdm = None
    if tqdm is not None:
        bar = tqdm(total=len(tasks), file=sys.stderr, unit="row", dynamic_ncols=True, leave=True)
        try:
            for task in tasks:
                bar.set_description_str(shorten(task.label, 40))
                yield task
                bar.update(1)
        finally:
            bar.close()
        return
    width = len(str(len(tasks)))
    for i, task in enumerate(tasks, 1):
        print(f"[{i:>{width}}/{len(tasks)}] {task.label}", file=sys.stderr, flush=True)
        yield task
