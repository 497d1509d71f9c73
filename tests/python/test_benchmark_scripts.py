"""What the benchmark scripts print is what they measured (CI runs each with --smoke)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks", "python"))

import vs_torch_profiler  # noqa: E402  (imports torch only when run)


def test_a_ratio_below_one_reads_as_what_it_is():
    # A profkit export slower than torch.profiler's printed "(1x faster)".
    assert vs_torch_profiler.times(0.79, "faster", "slower") == "0.79x, slower"
    assert vs_torch_profiler.times(12.34, "faster", "slower") == "12.3x faster"
    assert vs_torch_profiler.times(1.0, "smaller", "larger") == "1.0x smaller"
