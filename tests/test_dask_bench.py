"""benchmarks/run.py --dask: the dask section (bench_dask.py) lands in report.md, with numbers
that hold for what each path does. A tiny size (n = 256, 128-chunks: two k-blocks)."""
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("dask.array", reason="dask not installed (pip install 'dask[array,distributed]')")
pytest.importorskip("distributed", reason="distributed not installed")

RUN = Path(__file__).resolve().parent.parent / "benchmarks" / "run.py"
U = 2.0 ** -8   # bfloat16's unit roundoff


@pytest.fixture(scope="module")
def dask_rows(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    res = subprocess.run([sys.executable, str(RUN), "--quick", "--only", "memory", "--no-plots",
                          "--no-progress", "--dask", "--dask-n", "256", "--out-dir", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    report = (out / "report.md").read_text()
    assert "## dask on a 2-worker LocalCluster: n = 256, chunks 128×128" in report
    section = report.split("## dask on a 2-worker LocalCluster", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 8 and cells[0] in ("matmul", "sum", "sum(axis=0)"):
            rows[(cells[0], cells[1])] = cells
    return rows


def _mib(cell: str) -> float:
    value, unit = cell.split()
    return float(value) * (1024 if unit == "GiB" else 1)


def test_every_case_is_in_the_report(dask_rows):
    assert len(dask_rows) == 9
    for op in ("matmul", "sum", "sum(axis=0)"):
        assert sum(1 for o, label in dask_rows if o == op and label.startswith("float32")) == 1
        assert sum(1 for o, label in dask_rows if o == op and "bfloat16_dtype.dask" in label) == 1


def test_errors_and_memory_are_plausible(dask_rows):
    for (op, label), cells in dask_rows.items():
        assert re.fullmatch(r"\d+\.\d{3} s \(\d+\.\d\d× float32\)(, median of \d+)?", cells[2]), cells[2]
        peak, held = _mib(cells[4]), _mib(cells[5])
        assert 0 < held <= peak < 4096, (peak, held)
        max_err, mean_err = float(cells[6]), float(cells[7])
        assert 0 <= mean_err <= max_err
        if label.startswith("float32"):
            assert max_err < 1e-5, (op, max_err)
        elif "bfloat16_dtype.dask" in label:
            # float32 accumulation (its own error is below 1e-5 here, as the float32 rows show),
            # then one rounding to bfloat16: within one unit roundoff
            assert max_err <= U + 1e-5, (op, max_err)
        else:
            # dask's own bfloat16 path: a rounding per block and per partial sum, a few in all
            assert max_err < 4 * U, (op, max_err)
