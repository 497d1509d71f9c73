"""Runs a function first thing in each process multiprocessing forks from this one.

multiprocessing's fork start method (Linux's default before Python 3.14, and
the DataLoader's) copies the whole process into a child that runs one target
-- a DataLoader worker, a Pool or ProcessPoolExecutor worker -- and never
returns to the parent's code. What the parent had under way, a recording
Profiler among it, has no one to finish it there. A plain ``os.fork()`` child
is not such a process: it goes on with the parent's code, so this module
leaves it alone.

Children made by spawn or forkserver start a fresh interpreter and inherit
nothing; multiprocessing runs the registered functions there too, where they
find nothing to do.

Thread-safety: ``run_in_forked_children`` is called with the GIL held; the
functions run in the child's only thread, before its target.
"""

from typing import Callable, List

_functions: List[Callable[[], None]] = []


class _Anchor:
    """What multiprocessing's registry holds (weakly): this module keeps it alive."""


_anchor = _Anchor()


def _run_all(_anchor: _Anchor) -> None:
    for function in _functions:
        function()


def run_in_forked_children(function: Callable[[], None]) -> None:
    """Calls ``function()`` in every process multiprocessing starts from this
    one from now on, before the process's target runs. Registering the same
    function again does nothing. multiprocessing only logs what a function
    raises (at its INFO level), so ``function`` reports its own failures."""
    if function in _functions:
        return
    if not _functions:
        # Imported here, not at profkit's import: multiprocessing costs a few
        # milliseconds to import, and only started Profilers need it.
        import multiprocessing.util

        multiprocessing.util.register_after_fork(_anchor, _run_all)
    _functions.append(function)
