"""Memory: bytes per element, the footprint of a 1e8-element array, and training arithmetic.

Footprints are computed from itemsize/nbytes of small arrays; nothing large is allocated.
"""

from __future__ import annotations

from _harness import Cell, Column, Context, Row, Section, format_bytes, run_cell

BIG = 10**8  # elements in the footprint row
MODEL_PARAMETERS = 7e9  # the spec's example: a 7B-parameter model


def build_memory(ctx: Context) -> list[Section]:
    per_dtype = Section(
        key="memory",
        title="Memory footprint",
        note=(
            "Bytes per element (from the itemsize of each contender's arrays) and the footprint of "
            "a 1e8-element array (computed from nbytes, not allocated), with the ratio to float32."
        ),
        columns=ctx.columns(),
    )

    def itemsize_row() -> Row:
        cells = {}
        for c in ctx.contenders:
            if not c.available:
                cells[c.key] = Cell.missing(c.status)
                continue
            cells[c.key] = run_cell(lambda c=c: Cell.number(c.itemsize()))
        return Row("bytes per element", "1", cells)

    def footprint_row() -> Row:
        reference = 4 * BIG
        cells = {}
        for c in ctx.contenders:
            if not c.available:
                cells[c.key] = Cell.missing(c.status)
                continue

            def one(c=c) -> Cell:
                nbytes = c.itemsize() * BIG
                return Cell.number(nbytes, f"{format_bytes(nbytes)} ({nbytes / reference:.2g}× float32)")

            cells[c.key] = run_cell(one)
        return Row("array footprint", "1e8", cells)

    per_dtype.add("bytes per element", itemsize_row)
    per_dtype.add("1e8 footprint", footprint_row)

    training = Section(
        key="training_memory",
        title="Training and inference memory per parameter",
        note=(
            "The arithmetic behind bfloat16 for models (weights, gradients and Adam state only; "
            "activations and workspace come on top). Mixed precision keeps an fp32 master copy, so "
            "its optimizer state costs as much as fp32 training: the savings are in activations, "
            "bandwidth and inference weights. The 16-bit size is bfloat16_dtype's measured itemsize."
        ),
        columns=[Column("bytes", "bytes per parameter"), Column("model_7b", "7B-parameter model")],
    )

    def bf16_bytes() -> int:
        ours = ctx.contender("ours")
        return ours.itemsize() if ours.available else 2

    def arithmetic_row(label: str, parts: list[tuple[str, int]]) -> Row:
        total = sum(size for _, size in parts)
        breakdown = " + ".join(f"{size} ({what})" for what, size in parts)
        cells = {
            "bytes": Cell.number(total, f"{total} = {breakdown}" if len(parts) > 1 else str(total)),
            "model_7b": Cell.number(total * MODEL_PARAMETERS, format_bytes(total * MODEL_PARAMETERS)),
        }
        return Row(label, "per parameter", cells)

    training.add(
        "bf16 inference",
        lambda: arithmetic_row("bfloat16 inference (weights)", [("bf16 weights", bf16_bytes())]),
    )
    training.add(
        "fp32 inference", lambda: arithmetic_row("float32 inference (weights)", [("fp32 weights", 4)])
    )
    training.add(
        "mixed-precision Adam",
        lambda: arithmetic_row(
            "mixed-precision Adam (bf16 compute, fp32 master)",
            [
                ("bf16 weights", bf16_bytes()),
                ("bf16 grads", bf16_bytes()),
                ("fp32 master", 4),
                ("Adam m", 4),
                ("Adam v", 4),
            ],
        ),
    )
    training.add(
        "fp32 Adam",
        lambda: arithmetic_row(
            "float32 Adam", [("fp32 weights", 4), ("fp32 grads", 4), ("Adam m", 4), ("Adam v", 4)]
        ),
    )
    return [per_dtype, training]


AREAS = {"memory": build_memory}
