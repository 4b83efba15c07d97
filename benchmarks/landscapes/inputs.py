"""Declarative inputs of the landscape kernels recorded for the learned prior (issue 23).

A kernel of this kind is one `.cu` file in `kernels/` with an `extern "C" __global__` function and an
`Entry` here: how its arguments are made (host numpy arrays are uploaded once; `OUT` is the float32
output buffer, set to NaN before the checked launch) and its launch shape. `record.py` reads `ENTRIES`
(from inputs_llm.py and inputs_hpc.py) next to its own hand-written `KERNELS`.

The output buffer is always float32 (`out_count` elements): it is compared with the default build's
output by relative L2 error, so kernels whose natural output is fp16/bf16/fp8/int8 or integer write a
float32 view of it (e.g. the dequantized value, the count as a float).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

OUT = object()  # placeholder for the output buffer among the arguments


@dataclass(frozen=True)
class Setup:
    """What one launch needs. `sig`: pycuda prepare() signature, one letter per argument
    (i int32, I uint32, f float32, d float64, P pointer); `args`: the values, in order (int/float for
    scalars, a numpy array for an input buffer, OUT for the output)."""

    sig: str
    args: list
    out_count: int
    grid: tuple[int, int]
    block: tuple[int, int, int]


@dataclass(frozen=True)
class Entry:
    source: str        # file name in kernels/
    function: str      # the extern "C" __global__ function
    kind: str          # short kind: "attention", "gemm-tc", "quantize", "norm", "rope", "softmax", "topk",
                       # "scan", "reduction", "histogram", "sort", "spmv", "stencil", "nbody", "fft", "montecarlo", ...
    character: str     # one line: what bounds it (memory, FMA, transcendentals, registers, atomics, ...)
    tolerance: float   # max relative L2 error vs the default build's output for a valid build
    problem: str       # sizes and launch shape, for people
    setup: Callable    # setup(rng: numpy.random.Generator) -> Setup
    extra_flags: tuple[str, ...] = field(default=())  # always passed (e.g. "-std=c++17"); not a flag searched
