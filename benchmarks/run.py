"""Benchmark bfloat16_dtype against float32, float16, ml_dtypes and torch on this machine.

    python benchmarks/run.py                 # full report, a few minutes
    python benchmarks/run.py --quick         # CI-sized, seconds
    python benchmarks/run.py --only matmul,sort --threads 1 --json results.json
    python benchmarks/run.py --only matmul,matvec --isa   # adds our kernel under each ISA tier

OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE (which fix OpenBLAS's kernel to one core type) are removed for the
benchmark: run.py starts itself again without them (``--keep-blas-env`` keeps them) and the report
says so, with float32 timed both ways.

Prints the report on the terminal and writes it as Markdown (``report.md``) plus PNG plots to
``benchmarks/results/`` (or ``--out-dir``). Contenders that are not installed, and features of
our own package that fail, appear in the report as "not installed" / "error: ..." cells; the run
itself does not fail because of them.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import re
import sys
import time
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
AREAS_IN_ORDER = [
    "memory",
    "accuracy",
    "convert",
    "elementwise",
    "reductions",
    "sort",
    "matmul",
    "matvec",
    "training",  # bench_training.py: an MLP trained in float32/bfloat16/float16
]


# bfloat16_dtype.linalg._MAX_THREADS, the kernel's limit (set_num_threads refuses more). Not read
# from the package: the thread variables must be set before numpy and the package load.
MAX_THREADS = 1024


def parse_size(text: str) -> int:
    """'4096', '2^20', '2**20', '1e6', '64k', '16M' -> int (a positive whole number)."""
    t = text.strip().lower().replace("_", "")
    match = re.fullmatch(r"(\d+)\s*(?:\^|\*\*)\s*(\d+)", t)
    if match:
        value = int(match.group(1)) ** int(match.group(2))
    elif t and t[-1] in "kmg" and t[:-1].isdigit():
        value = int(t[:-1]) * {"k": 2**10, "m": 2**20, "g": 2**30}[t[-1]]
    else:
        try:
            number = float(t)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a size: {text!r}") from None
        if not math.isfinite(number):  # inf, nan
            raise argparse.ArgumentTypeError(f"not a size: {text!r}")
        if number <= 0:
            raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
        if not number.is_integer():  # 1.5 was silently 1
            raise argparse.ArgumentTypeError(f"sizes must be whole numbers, got {text!r}")
        value = int(number)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"sizes must be positive, got {text!r}")
    return value


def parse_sizes(text: str) -> list[int]:
    sizes = [parse_size(part) for part in text.split(",") if part.strip()]
    if not sizes:  # an empty list would mean "the default sizes" (the full run's) without a word
        raise argparse.ArgumentTypeError(f"no sizes given in {text!r}")
    return sizes


def parse_threads(text: str) -> int:
    try:
        n = int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= n <= MAX_THREADS:
        raise argparse.ArgumentTypeError(f"must be between 1 and {MAX_THREADS}, got {n}")
    return n


def directory_problem(path: Path) -> str | None:
    """Why ``path`` cannot be used (or created) as a directory to write into; None if it can."""
    if path.exists():
        if not path.is_dir():
            return f"{str(path)!r} exists and is not a directory"
        if not os.access(path, os.W_OK | os.X_OK):
            return f"{str(path)!r} is not writable"
        return None
    existing = path.parent  # the nearest existing ancestor must be a directory we may write to
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"cannot create {str(path)!r}: {str(existing)!r} is not a directory"
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"cannot create {str(path)!r}: {str(existing)!r} is not writable"
    return None


def file_problem(path: Path) -> str | None:
    """Why a file cannot be written at ``path`` (its folders created as needed); None if it can."""
    if path.is_dir():
        return f"{str(path)!r} is a directory"
    if path.exists() and not os.access(path, os.W_OK):
        return f"{str(path)!r} is not writable"
    return directory_problem(path.parent)


def check_arguments(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Refuse output paths that would fail after the run (before any measurement), and note
    options that have no effect in the chosen run."""
    problem = directory_problem(args.out_dir) or file_problem(args.out_dir / "report.md")
    if problem:
        parser.error(f"--out-dir: {problem}")
    if args.json is not None:
        problem = file_problem(args.json)
        if problem:
            parser.error(f"--json: {problem}")
    areas = args.only or AREAS_IN_ORDER
    notes = []
    if args.isa and "matmul" not in areas:
        notes.append("--isa has no effect without the matmul area (add matmul to --only)")
    if args.dask_n is not None and not args.dask:
        notes.append("--dask-n has no effect without --dask")
    for note in notes:
        print(f"{parser.prog}: note: {note}", file=sys.stderr, flush=True)


def parse_areas(text: str) -> list[str]:
    areas = [a.strip() for a in text.split(",") if a.strip()]
    unknown = [a for a in areas if a not in AREAS_IN_ORDER]
    if unknown or not areas:
        raise argparse.ArgumentTypeError(
            f"unknown area(s) {', '.join(unknown) or '(none)'}; choose from {', '.join(AREAS_IN_ORDER)}"
        )
    return areas


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Benchmark report: bfloat16_dtype vs float32, float16, ml_dtypes and torch.",
        allow_abbrev=False,   # run_without_blas_forcing looks for --keep-blas-env spelled out
    )
    parser.add_argument("--quick", action="store_true", help="tiny sizes and few repeats (CI, < 30 s)")
    parser.add_argument(
        "--only",
        type=parse_areas,
        metavar="AREAS",
        help=f"comma-separated areas to run: {','.join(AREAS_IN_ORDER)} (default: all)",
    )
    parser.add_argument(
        "--sizes",
        type=parse_sizes,
        metavar="LIST",
        help="comma-separated sizes overriding the defaults, e.g. 2^20,2^24: element counts for "
        "vector operations, n for n×n matmul, n×n for matvec",
    )
    parser.add_argument(
        "--threads",
        type=parse_threads,
        metavar="N",
        help=f"thread count (1 to {MAX_THREADS}) for BLAS/OpenMP and our matmul kernel (set before "
        "the libraries load) and torch",
    )
    parser.add_argument("--json", type=Path, metavar="PATH", help="also write machine-readable results here")
    parser.add_argument(
        "--out-dir",
        type=Path,
        default=HERE / "results",
        metavar="DIR",
        help="where report.md and the plots go (default: benchmarks/results)",
    )
    parser.add_argument("--no-plots", action="store_true", help="do not write PNG plots")
    parser.add_argument(
        "--isa",
        action="store_true",
        help="with the matmul area: also time our GEMM/GEMV under every ISA tier this CPU supports",
    )
    parser.add_argument(
        "--keep-blas-env",
        action="store_true",
        help="keep OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE (by default they are removed for the run)",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    parser.add_argument(
        "--dask",
        action="store_true",
        help="also run bench_dask.py: 16384² (2048² with --quick) bfloat16/float32 matmul and sums on a "
        "2-worker LocalCluster (needs dask[distributed]; a few minutes, ~8 GiB); a section of the report",
    )
    parser.add_argument(
        "--dask-n",
        type=parse_size,
        metavar="N",
        help="with --dask: matrix size of the dask section instead of 16384 (2048 with --quick)",
    )
    args = parser.parse_args(argv)
    check_arguments(parser, args)
    return args


def apply_thread_limit(threads: int) -> None:
    # Native thread pools read these when the library loads, so this runs before numpy is imported.
    for var in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "BLIS_NUM_THREADS",
        "BFLOAT16_DTYPE_NUM_THREADS",
    ):
        os.environ[var] = str(threads)


BLAS_FORCING_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
REMOVED_MARK = "BFLOAT16_BENCH_REMOVED_BLAS_ENV"


def run_without_blas_forcing(argv: list[str]) -> None:
    """Start this script again without the variables that force OpenBLAS's kernel (OpenBLAS
    reads them once, when it loads); the removed values travel in REMOVED_MARK for the report."""
    if REMOVED_MARK in os.environ or "--keep-blas-env" in argv:
        return
    removed = {k: os.environ[k] for k in BLAS_FORCING_VARS if k in os.environ}
    if not removed:
        return
    env = {k: v for k, v in os.environ.items() if k not in removed}
    env[REMOVED_MARK] = json.dumps(removed)
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, str(Path(__file__).resolve()), *argv], env)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.threads:
        apply_thread_limit(args.threads)
    started = time.perf_counter()

    # Overflow to inf and the like are results here (the pitfalls table shows them), not noise.
    warnings.filterwarnings("ignore", category=RuntimeWarning)
    import _harness as h
    from _contenders import load_contenders, one_thread
    from _plots import make_plots
    from _preflight import find_crashing_ops
    import bench_accuracy
    import bench_elementwise
    import bench_matmul
    import bench_memory
    import bench_reductions
    import bench_sort

    builders = {}
    modules = (bench_memory, bench_accuracy, bench_elementwise, bench_reductions, bench_sort, bench_matmul)
    for module in modules:
        builders.update(module.AREAS)
    import bench_training  # the training area and its loss-curve plot

    builders.update(bench_training.AREAS)
    areas = [a for a in AREAS_IN_ORDER if a in (args.only or AREAS_IN_ORDER)]  # report order is fixed

    limiter = None
    if args.threads:
        try:
            import threadpoolctl

            limiter = threadpoolctl.threadpool_limits(args.threads)
        except ImportError:
            pass

    settings = h.Settings.for_mode(args.quick, sizes=args.sizes, threads=args.threads)
    others = h.CpuUsageByOthers()
    contenders = load_contenders(args.threads)
    log = (lambda msg: None) if args.no_progress else (lambda msg: print(msg, file=sys.stderr, flush=True))
    ours = next(c for c in contenders if c.key == h.OURS)
    crashed = {}
    if ours.available:
        log("checking bfloat16_dtype operations for crashes in a child process ...")
        crashed = find_crashing_ops()
        for op, reason in crashed.items():
            ours.disable(op, reason)
    log("measuring copy bandwidth ...")
    bandwidth = h.copy_bandwidth(2**20 if args.quick else 2**24, settings)
    ctx = h.Context(settings, contenders, copy_gbs=bandwidth, isa=args.isa)
    machine = h.machine_info(settings, contenders, bandwidth)
    machine["blas_env_removed"] = json.loads(os.environ.get(REMOVED_MARK) or "{}")
    machine["blas_env_kept"] = {k: os.environ[k] for k in BLAS_FORCING_VARS if k in os.environ}
    machine["crashing_operations"] = crashed

    sections: list[h.Section] = []
    for area in areas:
        built = builders[area](ctx)
        sections.extend(built if isinstance(built, list) else [built])

    tasks = [(s, t) for s in sections for t in s.tasks]
    task_of = {id(t): s for s, t in tasks}
    for task in h.progress([t for _, t in tasks], enabled=not args.no_progress):
        section = task_of[id(task)]
        try:
            with one_thread(contenders) if section.one_thread else contextlib.nullcontext():
                row = task.run()
        except Exception as exc:  # noqa: BLE001 -- one broken row must not end the report
            error = h.Cell.error(exc)
            row = h.Row(task.label.split(": ", 1)[-1], "—", {c.key: error for c in section.columns})
        section.rows.append(row)
    if limiter is not None:
        limiter.restore_original_limits()
    machine["other_processes_cores"] = others.average_cores()

    args.out_dir.mkdir(parents=True, exist_ok=True)
    plots, plot_note = ([], "plots disabled (--no-plots)") if args.no_plots else make_plots(
        sections, args.out_dir, bandwidth
    )
    if not args.no_plots and "training" in areas:
        plots = plots + bench_training.write_plots(args.out_dir)
    dask_section = None
    if args.dask:  # its own cluster and table, appended to the report (bench_dask.py)
        import bench_dask

        dask_args = ["--quick"] if args.quick else []
        if args.dask_n:
            dask_args += ["--n", str(args.dask_n)]
        dask_section = bench_dask.main(dask_args, log=log, echo=False)
    elapsed = time.perf_counter() - started
    given = argv if argv is not None else sys.argv[1:]
    command = " ".join(["python benchmarks/run.py", *public_arguments(given)])
    report = render_report(h, sections, machine, settings, command, elapsed, plots, plot_note)
    if dask_section:
        report += "\n\n" + dask_section.rstrip("\n")
    print(report)
    (args.out_dir / "report.md").write_text(report + "\n", encoding="utf-8")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        payload = {
            "schema": 1,
            "generated": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "command": command,
            "mode": "quick" if args.quick else "full",
            "elapsed_seconds": elapsed,
            "machine": machine,
            "settings": {
                "quick": settings.quick,
                "sizes": settings.sizes,
                "threads": settings.threads,
                "areas": areas,
                "budget_seconds_per_cell": settings.budget,
                "max_seconds_per_call": settings.max_call,
            },
            "sections": [s.to_json() for s in sections],
            "plots": [name for name, _ in plots],
        }
        args.json.write_text(json.dumps(strict_json(payload), indent=2) + "\n", encoding="utf-8")
    log(f"done in {elapsed:.1f} s; report written to {args.out_dir / 'report.md'}")
    return 0


def public_arguments(argv: list[str]) -> list[str]:
    """The command line as the report shows it: output locations are this machine's business."""
    shown, hide_next = [], False
    for arg in argv:
        if hide_next:
            shown.append("PATH")
            hide_next = False
        elif arg in ("--json", "--out-dir"):
            shown.append(arg)
            hide_next = True
        elif arg.startswith(("--json=", "--out-dir=")):
            shown.append(arg.split("=", 1)[0] + "=PATH")
        else:
            shown.append(arg)
    return shown


def strict_json(value):
    """Replace inf/nan (not valid JSON) by the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict):
        return {str(k): strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def rounds_text(rounds: int) -> str:
    """How the report's "How to read the tables" paragraph describes the rounds of each row."""
    if rounds <= 1:
        return ("measured in one round per row (quick mode: the contenders one after another in a "
                "fixed order, so a slow phase of the machine can fall on one contender alone)")
    count = {2: "two", 3: "three", 4: "four"}.get(rounds, str(rounds))
    reversed_in = "the second" if rounds == 2 else "every other round"
    kept = "faster" if rounds == 2 else "fastest"
    return (f"measured in {count} rounds per row with the contenders' order reversed in {reversed_in}, "
            f"each contender keeping its {kept} round (the machine's speed drifts; a slow phase then "
            "falls on every contender alike)")


def render_report(h, sections, machine, settings, command, elapsed, plots, plot_note) -> str:
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    mode = "quick mode: CI-sized inputs, timings not representative" if settings.quick else "full mode"
    parts = [
        "# bfloat16_dtype benchmark report",
        "",
        f"Generated {date} by `{command}` in {elapsed:.0f} s ({mode}).",
        "",
        "**How to read the tables.** Times are the median of repeated calls after one warm-up call "
        "(calls slower than a second are timed once; calls shorter than 0.2 ms in batches of "
        "back-to-back calls lasting about 0.2 ms, as timeit does), "
        + rounds_text(settings.rounds)
        + "; each contender's timing starts once the "
        "process's other threads are idle (OpenBLAS's workers spin for about 0.1 s after a call). "
        "*Speedup vs X* = X's time ÷ bfloat16_dtype's "
        "time: above 1 means bfloat16_dtype is faster than X, below 1 slower. Accuracy tables show "
        "errors (lower is better) side by side. A cell reads *not installed* when an optional "
        "contender is missing, *skipped* when it would be too slow at that size, and *error: ...* "
        "when the operation raised.",
        "",
        "## Machine",
        "",
        h.render_machine(machine),
    ]
    warning = h.busy_warning(machine)
    if warning:
        parts += ["", warning]
    for section in sections:
        parts += ["", h.render_section(section)]
    if plots or plot_note:
        parts += ["", "## Plots", ""]
        for name, caption in plots:
            parts += [f"![{caption}]({name})", "", f"*{caption}*", ""]
        if plot_note:
            parts += [plot_note]
    return "\n".join(parts).rstrip()


if __name__ == "__main__":
    run_without_blas_forcing(sys.argv[1:])
    sys.exit(main())
