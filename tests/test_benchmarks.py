"""The benchmark report runs end to end and has the promised structure (not its timings)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import bfloat16_dtype as bd

ROOT = Path(__file__).resolve().parent.parent
RUN = ROOT / "benchmarks" / "run.py"

SECTION_TITLES = {
    "memory": "## Memory footprint",
    "training_memory": "## Training and inference memory per parameter",
    "accuracy": "## Accuracy against float64",
    "pitfalls": "## float16 failures next to bfloat16's behaviour",
    "convert": "## Conversion to and from float32",
    "elementwise": "## Elementwise ufuncs",
    "reductions": "## Reductions",
    "sort": "## Sorting",
    "matmul": "## Matrix multiplication (GEMM)",
    "matmul_threads": "## Matrix multiplication by thread count",
    "matmul_memory": "## Extra memory of one matmul call",
    "matvec": "## Matrix-vector products",
    "matvec_batched": "## Batched matrix-vector products",
    "training": "## Training an MLP on digits",
    "training_underflow": "## Gradients that underflow in float16 but not in bfloat16",
    "training_swamping": "## Weight updates lost to swamping",
}
# present only when OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE were set, and with --isa
OPTIONAL_SECTIONS = {"matmul_blas_env", "matmul_isa"}
SPEED_SECTIONS = {"convert", "elementwise", "reductions", "sort", "matmul", "matvec"}
CONTENDERS = {"ours", "float32", "float16", "ml_dtypes", "torch"}
CELL_STATUSES = {"ok", "error", "not installed", "skipped", "n/a"}


def run_benchmarks(tmp_path: Path, *extra: str) -> tuple[subprocess.CompletedProcess, Path, Path]:
    out_dir = tmp_path / "results"
    json_path = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--no-progress"]
        + ["--out-dir", str(out_dir), "--json", str(json_path), *extra],
        cwd=tmp_path,  # nothing is written next to the committed results
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, f"run.py failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc, out_dir, json_path


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("bench")
    proc, out_dir, json_path = run_benchmarks(tmp_path)
    report = (out_dir / "report.md").read_text(encoding="utf-8")
    return proc, report, json.loads(json_path.read_text()), out_dir


def test_report_has_every_section_and_the_machine(quick_run):
    proc, report, _, out_dir = quick_run
    assert str(out_dir.parent) not in report  # no machine paths in a file meant to be committed
    assert report.startswith("# bfloat16_dtype benchmark report")
    assert "## Machine" in report and "CPU:" in report and "copy bandwidth" in report
    assert "BLAS" in report
    for title in SECTION_TITLES.values():
        assert title in report, title
    assert "Speedup vs X* = X's time ÷ bfloat16_dtype's time" in report
    # the terminal shows the same report
    assert "## Matrix multiplication (GEMM)" in proc.stdout


def test_speed_tables_have_contender_and_speedup_columns(quick_run):
    _, report, _, _ = quick_run
    for key in SPEED_SECTIONS:
        block = report.split(SECTION_TITLES[key], 1)[1].split("\n## ", 1)[0]
        header = next(line for line in block.splitlines() if line.startswith("| operation"))
        for label in ("size", "float32", "float16", "ml_dtypes bf16", "torch bf16", "speedup vs float32"):
            assert label in header, (key, label)
        assert "speedup vs ml_dtypes bf16" in header
        assert "bfloat16_dtype" in header


def test_json_structure(quick_run):
    _, _, data, _ = quick_run
    top = {"schema", "generated", "command", "mode", "elapsed_seconds", "machine", "settings", "sections"}
    assert top <= set(data)
    assert data["mode"] == "quick"
    machine = data["machine"]
    for key in ("cpu", "logical_cores", "numpy", "blas", "thread_pools", "copy_bandwidth_gbs", "contenders"):
        assert key in machine
    assert set(machine["contenders"]) == CONTENDERS
    sections = {s["key"]: s for s in data["sections"]}
    assert set(SECTION_TITLES) <= set(sections) <= set(SECTION_TITLES) | OPTIONAL_SECTIONS
    for key, section in sections.items():
        assert {"title", "note", "columns", "speedup_columns", "rows"} <= set(section)
        assert section["rows"], key
        column_keys = [c["key"] for c in section["columns"]]
        for row in section["rows"]:
            assert {"operation", "size", "cells", "speedup"} <= set(row)
            assert set(row["cells"]) == set(column_keys), (key, row["operation"])
            for cell in row["cells"].values():
                assert cell["status"] in CELL_STATUSES
                assert isinstance(cell["text"], str) and cell["text"]
    for key in SPEED_SECTIONS:
        section = sections[key]
        assert section["speedup_columns"] == ["float32", "ml_dtypes"]
        assert "ours" in [c["key"] for c in section["columns"]]
        timed = [
            cell
            for row in section["rows"]
            for cell in row["cells"].values()
            if cell["status"] == "ok" and "seconds" in cell
        ]
        assert timed, key
        assert all(cell["seconds"] > 0 for cell in timed)
    # the float32 baseline always runs
    for key in ("convert", "elementwise", "matmul"):
        assert any(r["cells"]["float32"]["status"] == "ok" for r in sections[key]["rows"])


def test_accuracy_values_are_sane(quick_run):
    _, _, data, _ = quick_run
    sections = {s["key"]: s for s in data["sections"]}
    rows = {r["operation"]: r for r in sections["pitfalls"]["rows"]}
    float16 = {op: r["cells"]["float16"].get("value") for op, r in rows.items()}
    assert float16["65505 (float16 max is 65504)"] == 65504
    assert float16["70000 (float16 overflows ≥ 65520)"] == "inf"  # strict JSON spells inf as a string
    bytes_row = sections["memory"]["rows"][0]
    assert bytes_row["cells"]["float32"]["value"] == 4
    assert bytes_row["cells"]["float16"]["value"] == 2


def test_matmul_extras_small_sizes_threads_batches_and_memory(quick_run):
    _, report, data, _ = quick_run
    sections = {s["key"]: s for s in data["sections"]}
    sizes = {r["size"] for r in sections["matmul"]["rows"]}
    assert {"n=16", "n=64"} <= sizes  # call overhead rows
    threads = sections["matmul_threads"]
    assert [c["key"] for c in threads["columns"]] == ["ours", "ours_operator", "float32", "torch", "peak"]
    assert threads["speedup_columns"] == ["float32", "torch", "peak"]
    assert {r["operation"] for r in threads["rows"]} == {"a @ b, 1 thread", "a @ b, 2 threads"}
    simd = not bd._ext._gemm_kernel.startswith("baseline")
    for row in threads["rows"]:
        assert row["cells"]["ours"]["status"] == "ok"
        # the kernel's instruction alone, for the same flops (bench_matmul._peak_variant)
        assert row["cells"]["peak"]["status"] == ("ok" if simd else "not installed")
        assert (row["speedup"]["peak"] is not None) == simd
        expected = "ok" if importlib.util.find_spec("threadpoolctl") else "not installed"
        assert row["cells"]["float32"]["status"] == expected
        assert "float32" in row["speedup"]
    batched = sections["matvec_batched"]
    assert [r["size"].rsplit("×", 1)[1] for r in batched["rows"]] == ["1", "2", "4", "8", "16"]
    assert batched["speedup_columns"] == ["float32", "ml_dtypes", "torch"]
    assert all(r["cells"]["float32"]["status"] == "ok" for r in batched["rows"])
    memory = sections["matmul_memory"]
    assert [r["operation"] for r in memory["rows"]] == [
        "bfloat16_dtype.matmul(W, x)",
        "bfloat16_dtype.matmul(a, b)",
    ]
    for row in memory["rows"]:
        cells = row["cells"]
        assert cells["widened"]["value"] == 2 * cells["inputs"]["value"]  # float32 copies
        if not sys.platform.startswith("linux"):
            assert cells["check"]["status"] == "skipped"
            continue
        assert cells["check"]["text"] == "passed", cells["check"]["text"]
        assert 0 <= cells["measured"]["value"] <= cells["bound"]["value"] + 16 * 2**20
    assert "FAILED" not in report


def test_plots_written_when_matplotlib_present(quick_run):
    _, report, data, out_dir = quick_run
    if importlib.util.find_spec("matplotlib") is None:
        assert "plots skipped" in report
        return
    assert {"matmul_gflops.png", "throughput.png", "matvec_bandwidth.png"} <= set(data["plots"])
    for name in data["plots"]:
        assert (out_dir / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"]({name})" in report


def test_only_and_sizes_options(tmp_path):
    options = ["--only", "sort,memory", "--sizes", "2^10", "--threads", "1", "--no-plots"]
    proc, out_dir, json_path = run_benchmarks(tmp_path, *options)
    data = json.loads(json_path.read_text())
    assert [s["key"] for s in data["sections"]] == ["memory", "training_memory", "sort"]
    assert {r["size"] for r in data["sections"][2]["rows"]} == {"2^10"}
    assert data["settings"]["threads"] == 1
    assert not list(out_dir.glob("*.png"))


def test_unknown_area_is_a_usage_error(tmp_path):
    proc = subprocess.run(
        [sys.executable, str(RUN), "--only", "nonsense", "--out-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 2
    assert "unknown area" in proc.stderr


def test_a_failing_operation_becomes_an_error_cell():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
    finally:
        sys.path.pop(0)

    class Broken:
        key, label, available, status = "ours", "ours", True, None

    class Missing:
        key, label, available, status = "ml_dtypes", "ml_dtypes", False, "not installed"

    settings = h.Settings.for_mode(quick=True)
    ctx = h.Context(settings, [Broken(), Missing()])
    section = h.Section("x", "x", "", ctx.columns(), ctx.ratio_columns())

    def setup(c):
        raise ValueError("no loop for bfloat16")

    row = h.speed_row(ctx, section, "op", "1", setup)
    assert row.cells["ours"].status == "error"
    assert row.cells["ours"].text == "error: ValueError: no loop for bfloat16"
    assert row.cells["ml_dtypes"].text == "not installed"
    assert row.speedup == {"ml_dtypes": None}


def _cpuinfo(vendor, family, model):
    return (f"processor\t: 0\nvendor_id\t: {vendor}\ncpu family\t: {family}\nmodel\t\t: {model}\n"
            f"model name\t: CPU\n\nprocessor\t: 1\nvendor_id\t: Other\ncpu family\t: 1\nmodel\t\t: 1\n")


@pytest.mark.parametrize("vendor,family,model,core", [
    ("AuthenticAMD", 25, 1, "Zen 3"),              # EPYC 7003 (Milan)
    ("AuthenticAMD", 25, 17, "Zen 4"),             # EPYC 9004 (Genoa)
    ("AuthenticAMD", 25, 97, "Zen 4"),             # Ryzen 7000 (Raphael)
    ("AuthenticAMD", 26, 2, "Zen 5"),              # EPYC 9005 (Turin)
    ("GenuineIntel", 6, 143, "Sapphire Rapids"),
    ("GenuineIntel", 6, 85, None),                 # Skylake-SP / Cascade Lake / Cooper Lake share it
    ("GenuineIntel", 25, 17, None),                # an AMD family number on another vendor
])
def test_report_names_the_cpu_core(vendor, family, model, core):
    """The machine section gives the first processor's family and model, and the core's name where
    the vendors' model numbers settle it (a VM's model name may say only "AMD EPYC")."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
    finally:
        sys.path.pop(0)
    text = h.cpu_core(_cpuinfo(vendor, family, model))
    assert text == f"family {family}, model {model}" + (f" ({core})" if core else "")
    assert h.cpu_core("processor\t: 0\nmodel name\t: CPU\n") == ""


def _fake_package(root: Path, body: str) -> dict[str, str]:
    """A stand-in `bfloat16_dtype` on PYTHONPATH, to show how the report treats a broken package."""
    package = root / "fake" / "bfloat16_dtype"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(body, encoding="utf-8")
    return {**os.environ, "PYTHONPATH": str(root / "fake")}


def _run_with_env(tmp_path: Path, env: dict[str, str], *extra: str) -> dict:
    json_path = tmp_path / "r.json"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--no-progress", "--no-plots"]
        + ["--out-dir", str(tmp_path / "out"), "--json", str(json_path), *extra],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(json_path.read_text())


def test_a_crashing_operation_of_ours_is_reported_not_fatal(tmp_path):
    env = _fake_package(
        tmp_path,
        "import os, signal\n"
        "import numpy as np\n"
        "bfloat16 = np.float32\n"
        "def matmul(a, b, *, out=None, out_dtype=None):\n"
        "    os.kill(os.getpid(), signal.SIGSEGV)\n",
    )
    data = _run_with_env(tmp_path, env, "--only", "matmul")
    assert list(data["machine"]["crashing_operations"]) == ["package_matmul"]
    rows = [r for r in data["sections"][0]["rows"] if r["operation"] == "a @ b"]
    assert rows
    for row in rows:
        ours = row["cells"]["ours"]
        assert ours["status"] == "error" and "crashed" in ours["text"]
        assert row["cells"]["ours_operator"]["status"] == "ok"  # the rest of the row still ran
        assert row["cells"]["float32"]["status"] == "ok"


def test_an_unimportable_package_is_reported_in_every_cell(tmp_path):
    env = _fake_package(tmp_path, "raise ImportError('extension not built')\n")
    data = _run_with_env(tmp_path, env, "--only", "memory,reductions,elementwise")
    assert data["machine"]["contenders"]["ours"].startswith("error: ImportError: extension not built")
    for key in ("reductions", "elementwise"):   # elementwise's tier note raised before the run
        section = next(s for s in data["sections"] if s["key"] == key)
        for row in section["rows"]:
            assert row["cells"]["ours"]["text"] == "error: ImportError: extension not built"
            assert row["cells"]["float32"]["status"] == "ok"
            assert row["speedup"]["float32"] is None


def test_blas_forcing_variables_removed_and_isa_tiers(tmp_path):
    """run.py drops OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE for the benchmark (float32 on OpenBLAS's best
    kernel), says so, times float32 both ways, and --isa adds a column per supported tier."""
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell", OPENBLAS_L2_SIZE="1048576")
    out_dir, json_path = tmp_path / "results", tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, str(RUN), "--quick", "--no-progress", "--no-plots", "--only", "matmul", "--isa",
         "--out-dir", str(out_dir), "--json", str(json_path)],
        cwd=tmp_path, capture_output=True, text=True, timeout=400, env=env,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (out_dir / "report.md").read_text(encoding="utf-8")
    assert "OPENBLAS_CORETYPE=Haswell, OPENBLAS_L2_SIZE=1048576 were set in the environment" in report
    import bfloat16_dtype as bd

    if bd.config()["detected"] in ("avx512", "avx512bf16"):  # OpenBLAS's own pick is not Haswell there
        assert "arch Haswell" not in report
    data = json.loads(json_path.read_text())
    sections = {s["key"]: s for s in data["sections"]}
    forced = sections["matmul_blas_env"]
    assert [c["key"] for c in forced["columns"]] == ["ours", "float32", "float32_forced"]
    isa = sections["matmul_isa"]
    tiers = ("baseline", "avx2", "avx512", "avx512bf16", "amx")
    supported = tiers[: tiers.index(bd.config()["detected"]) + 1]
    assert len(isa["columns"]) == len(supported) + 1  # one per tier, then float32
    for row in isa["rows"] + forced["rows"]:
        for cell in row["cells"].values():
            assert cell["status"] == "ok", cell


def test_kept_blas_forcing_variables_are_reported(tmp_path):
    """--keep-blas-env keeps OPENBLAS_CORETYPE for the run, and the machine section says so
    (it said nothing of them)."""
    env = dict(os.environ, OPENBLAS_CORETYPE="Haswell")
    proc = _run_cli(tmp_path, "--keep-blas-env", env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "OPENBLAS_CORETYPE=Haswell kept (--keep-blas-env)" in report
    assert "were removed for this run" not in report


def test_timing_waits_until_other_threads_are_idle():
    """measure() starts only once the process's other threads stop using the CPU (thread pools
    that spin after a call, as OpenBLAS's workers do for ~0.1 s); a thread spinning for 0.3 s
    delays it, an idle process does not."""
    import threading
    import time

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
    finally:
        sys.path.pop(0)

    assert h.wait_for_quiet_threads() < 0.2

    def spin(until):
        while time.perf_counter() < until:
            pass

    worker = threading.Thread(target=spin, args=(time.perf_counter() + 0.3,))
    worker.start()
    try:
        waited = h.wait_for_quiet_threads()
    finally:
        worker.join()
    assert 0.2 <= waited < h.QUIET_MAX_WAIT


def test_single_thread_tables_run_torch_on_one_thread(quick_run):
    """The elementwise, reduction and sort tables compare one thread with one thread: torch's
    intra-op pool is set to 1 while they are measured and restored afterwards."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        from _contenders import one_thread
    finally:
        sys.path.pop(0)

    class FakeTorch:
        def __init__(self):
            self.threads = 2

        def get_num_threads(self):
            return self.threads

        def set_num_threads(self, n):
            self.threads = n

    class TorchLike:
        def __init__(self):
            self.torch = FakeTorch()

    class NumpyLike:
        torch = None

    peer = TorchLike()
    with one_thread([NumpyLike(), peer]):
        assert peer.torch.threads == 1
    assert peer.torch.threads == 2
    with pytest.raises(RuntimeError):
        with one_thread([peer]):
            raise RuntimeError("a failing row")
    assert peer.torch.threads == 2

    _, _, payload, _ = quick_run
    notes = {s["key"]: s["note"] for s in payload["sections"]}
    for key in ("convert", "elementwise", "reductions", "sort"):
        assert "torch.set_num_threads(1)" in notes[key], key
    assert "torch.set_num_threads(1)" not in notes["matmul"]


def test_rows_keep_each_contenders_fastest_round():
    """best_round_cells measures every key once per round, in reversed order every other
    round, keeps each key's fastest timing and does not repeat a key whose cell is an error."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
    finally:
        sys.path.pop(0)
    calls = []
    times = {("a", 0): 3.0, ("a", 1): 1.0, ("b", 0): 2.0, ("b", 1): 5.0}

    def measure_key(key):
        r = sum(1 for k in calls if k == key)
        calls.append(key)
        if key == "broken":
            return h.Cell.error("no loop")
        return h.Cell("x", seconds=times[(key, r)])

    best = h.best_round_cells(["a", "b", "broken"], measure_key, 2)
    assert calls == ["a", "b", "broken", "b", "a"]
    assert best["a"].seconds == 1.0 and best["b"].seconds == 2.0
    assert best["broken"].status == "error"
    assert h.Settings.for_mode(False).per_round().budget == h.Settings().budget / 2


def test_short_calls_are_timed_in_batches():
    """measure() times a call shorter than BATCH_SAMPLE in batches of back-to-back calls and
    reports the time of one call; a longer call is timed one call a sample."""
    import time

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
    finally:
        sys.path.pop(0)

    def spinner(seconds, calls):
        def fn():
            calls.append(None)
            until = time.perf_counter() + seconds
            while time.perf_counter() < until:
                pass
        return fn

    settings = h.Settings(budget=0.05, max_repeats=5, min_repeats=3)
    short = []
    t = h.measure(spinner(1e-5, short), settings)
    assert 1e-5 <= t.seconds < 1e-4
    # a warm-up call, three to size the batch (the fastest: one preempted call on a busy
    # machine made batches of 1-2), then each sample a batch of about BATCH_SAMPLE / 10 us calls
    assert len(short) >= 4 + t.repeats * int(h.BATCH_SAMPLE / 1e-5) // 2
    long = []
    t = h.measure(spinner(2 * h.BATCH_SAMPLE, long), settings)
    assert 2 * h.BATCH_SAMPLE <= t.seconds < 20 * h.BATCH_SAMPLE
    assert len(long) == 4 + t.repeats      # warm-up, three more (below WARM_AGAIN), the samples


def test_a_slow_first_call_does_not_size_the_cell():
    """A first call far slower than the rest (a BLAS waking its sleeping threads: tens of ms on
    a busy machine) made a 1 ms call's cell three samples; the fastest of three more warm-up
    calls sizes it now."""
    import time

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
    finally:
        sys.path.pop(0)
    calls = []

    def fn():
        calls.append(None)
        until = time.perf_counter() + (0.05 if len(calls) == 1 else 1e-3)
        while time.perf_counter() < until:
            pass

    settings = h.Settings(budget=0.05, max_repeats=50, min_repeats=3)
    t = h.measure(fn, settings)
    assert 1e-3 <= t.seconds < 5e-3
    assert t.repeats >= 10      # budget / 1 ms would be 50; three when sized from the first call


# ---- command-line validation: a usage error before anything runs, never a traceback ------------


def _run_cli(tmp_path: Path, *options: str, script: Path = RUN, env: dict[str, str] | None = None,
             ) -> subprocess.CompletedProcess:
    """run.py (or ``script``) with ``options`` after a small valid command line (a quick memory
    run into tmp_path, seconds), so that an option that is not refused runs little."""
    base = ["--quick", "--no-progress", "--no-plots", "--only", "memory",
            "--out-dir", str(tmp_path / "out")] if script == RUN else []
    return subprocess.run(
        [sys.executable, str(script), *base, *options],
        cwd=tmp_path,  # as run_benchmarks: nothing is written next to the committed results
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
    )


def _assert_usage_error(proc: subprocess.CompletedProcess, option: str, prog: str = "run.py") -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 2, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith(f"{prog}: error:") and option in last, proc.stderr


@pytest.mark.parametrize(
    "options, option",
    [
        (["--threads", "1025"], "--threads"),  # set_num_threads' limit: was a ValueError traceback
        (["--sizes", "inf"], "--sizes"),  # was an OverflowError traceback
        (["--sizes", ","], "--sizes"),  # was the full run's default sizes, silently
        (["--sizes", "1.5"], "--sizes"),  # was 1, silently
        (["--dask-n", "inf"], "--dask-n"),
        (["--keep"], "--keep"),  # an abbreviation of --keep-blas-env: it removed the variables
    ],
    ids=["threads-1025", "sizes-inf", "sizes-comma", "sizes-1.5", "dask-n-inf", "keep-abbreviated"],
)
def test_bad_option_values_are_usage_errors(tmp_path, options, option):
    proc = _run_cli(tmp_path, *options)
    _assert_usage_error(proc, option)
    assert not (tmp_path / "out").exists()  # refused before the run


def test_output_paths_are_checked_before_the_run(tmp_path):
    """--out-dir naming a file and --json naming a directory failed with a traceback after every
    measurement had been made."""
    a_file = tmp_path / "a_file.txt"
    a_file.write_text("not a directory\n")
    proc = _run_cli(tmp_path, "--out-dir", str(a_file))
    _assert_usage_error(proc, "--out-dir")
    proc = _run_cli(tmp_path, "--out-dir", str(a_file / "below"))
    _assert_usage_error(proc, "--out-dir")
    a_dir = tmp_path / "a_dir"
    a_dir.mkdir()
    proc = _run_cli(tmp_path, "--json", str(a_dir))
    _assert_usage_error(proc, "--json")
    assert "measuring" not in proc.stderr and not (tmp_path / "out").exists()


@pytest.mark.parametrize("option", ["--n", "--chunk"])
def test_bench_dask_refuses_zero(tmp_path, option):
    """bench_dask.py --n 0 ran the full n = 16384 (`args.n or default`), --chunk 0 took n/4
    (--repeats 0 and --sample 0 were already refused). A stand-in dask that
    cannot be imported keeps an unrefused value from starting a cluster (the script then says
    "skipped" and exits 0)."""
    fake = tmp_path / "fake"
    (fake / "dask").mkdir(parents=True)
    (fake / "dask" / "__init__.py").write_text("raise ImportError('blocked by the test', name='dask')\n")
    path = os.pathsep.join([str(fake), *filter(None, [os.environ.get("PYTHONPATH")])])
    proc = _run_cli(tmp_path, option, "0", script=ROOT / "benchmarks" / "bench_dask.py",
                    env={**os.environ, "PYTHONPATH": path})
    _assert_usage_error(proc, option, prog="bench_dask.py")


@pytest.mark.parametrize("options, option", [
    (["--sizes", "0"], "--sizes"), (["--sizes", "x"], "--sizes"),
    (["--ops", "exp,foo"], "--ops"), (["--repeats", "0"], "--repeats")])
def test_bench_transcendental_refuses_bad_options(tmp_path, options, option):
    """bench_transcendental.py: sizes in run.py's syntax, known ops, at least one repeat; a bad
    value is a usage error, not a traceback (--repeats 0 was min() of nothing)."""
    proc = _run_cli(tmp_path, *options, script=ROOT / "benchmarks" / "bench_transcendental.py")
    _assert_usage_error(proc, option, prog="bench_transcendental.py")


def test_bench_transcendental_takes_the_report_size_syntax(tmp_path):
    """--sizes 2^12 (the report's syntax, a ValueError traceback before) measures n = 4096."""
    proc = _run_cli(tmp_path, "--sizes", "2^12", "--ops", "exp", "--repeats", "1",
                    script=ROOT / "benchmarks" / "bench_transcendental.py")
    assert proc.returncode == 0, proc.stderr[-2000:]
    rows = [line.split() for line in proc.stdout.splitlines()[1:]]
    assert [(r[0], r[1]) for r in rows] == [("exp", "4096")], proc.stdout


def _load_run_module():
    spec = importlib.util.spec_from_file_location("_bench_run_under_test", RUN)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_options_without_effect_are_noted(tmp_path, capsys):
    """--isa without the matmul area and --dask-n without --dask change nothing: a note says so
    (on stderr; not an error)."""
    run = _load_run_module()
    out = ["--out-dir", str(tmp_path / "out")]
    args = run.parse_args(["--isa", "--only", "memory,sort", "--dask-n", "64", *out])
    assert args.isa and args.dask_n == 64
    err = capsys.readouterr().err
    assert "--isa has no effect" in err and "--dask-n has no effect" in err
    run.parse_args(["--isa", "--only", "sort,matmul", "--dask", "--dask-n", "64", *out])
    run.parse_args(["--isa", *out])  # every area, matmul included
    assert "note" not in capsys.readouterr().err


def test_thread_limit_is_the_packages():
    run = _load_run_module()
    assert run.MAX_THREADS == bd.linalg._MAX_THREADS
    assert run.parse_threads(str(run.MAX_THREADS)) == run.MAX_THREADS


def test_quick_report_describes_its_single_round(quick_run):
    """--quick times each row in one round (Settings.for_mode): the report must not say two."""
    _, report, data, _ = quick_run
    assert "two rounds" not in report
    assert "one round per row" in report


def test_matmul_memory_rows_carry_their_own_size():
    """With several sizes and no measurement (here: our package unavailable), every size's rows
    were labelled, and computed, with the last size (a free variable in the tasks' closure)."""
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import _harness as h
        import bench_matmul
    finally:
        sys.path.pop(0)

    class Unavailable:
        key, label, available, status = h.OURS, "bfloat16_dtype", False, "not installed"

    ctx = h.Context(h.Settings.for_mode(True, sizes=[64, 128]), [Unavailable()])
    section = bench_matmul.build_matmul_memory(ctx)
    rows = [task.run() for task in section.tasks]  # after building, as run.py runs them
    assert [r.size for r in rows] == ["64×64 @ 64", "64×64 @ 64×64", "128×128 @ 128", "128×128 @ 128×128"]
    assert [r.cells["inputs"].value for r in rows] == [
        2 * (n * n + n * cols) for n in (64, 128) for cols in (1, n)
    ]
    assert all(r.cells["measured"].text == "not installed" for r in rows)
