"""Records a few nested ranges through the engine and writes both trace files.

This drives the thin engine binding directly; see the other examples for the
paddle.profiler-style API.
"""

import os
import time

from profkit import _C

OUT = os.path.join(os.getcwd(), "profiler_log")
os.makedirs(OUT, exist_ok=True)

_C.set_state(2)  # RECORD
for step in range(3):
    _C.step_begin(step)
    _C.begin_event_str("forward", 9)
    time.sleep(0.002)
    _C.end_event()
    _C.begin_event_str("backward", 10)
    time.sleep(0.003)
    _C.end_event()
    _C.step_end(32)
_C.set_state(0)  # CLOSED
result = _C.collect()
trace = os.path.join(OUT, "engine_demo.pktrace")
timeline = os.path.join(OUT, "engine_demo.trace.json")
result.save(trace)
result.export_chrome(timeline)
print(f"recorded {result.info()['host_event_count']} events")
print(f"trace file: {trace}")
print(f"timeline:   {timeline}  (open it in https://ui.perfetto.dev or chrome://tracing)")
