"""Save a window as a .pktrace file, load it back and analyse it.

load_profiler_result gives the same ProfilerResult as a live run: events as
a NumPy structured array (or a pandas DataFrame), run metadata, Chrome
export. It also reads the .trace.json files profkit writes (the default
on_trace_ready's), as shown at the end. From a shell: `profkit info FILE`,
`profkit summary FILE` and `profkit export FILE -o OUT`.
"""

import numpy as np

import profkit as profiler

rng = np.random.default_rng(0)
W = rng.standard_normal((128, 128))

exporter = profiler.export_protobuf("./profiler_log", worker_name="trainer")
with profiler.Profiler(scheduler=(1, 4), on_trace_ready=exporter) as prof:
    for step in range(5):
        with profiler.RecordEvent("matmul", profiler.TracerEventType.Operator):
            W = np.tanh(W @ W / 128)
        prof.step()

result = profiler.load_profiler_result(exporter.paths[0])
print(result)
events = result.events  # NumPy structured array, one row per host event
matmuls = events[events["name"] == "matmul"]
print(f"steps {result.steps}; matmul mean {matmuls['duration_ns'].mean() / 1e3:.1f} us over {len(matmuls)} calls")
try:
    frame = result.to_pandas()
    print(frame.groupby("type_name", observed=True)["duration_ns"].sum())
except ImportError:
    print("pip install pandas for result.to_pandas()")
result.export_chrome_tracing("./profiler_log/trainer.trace.json")
print("timeline: ./profiler_log/trainer.trace.json")
# The Chrome JSON loads back as the same result (a .pktrace is smaller and loads faster).
again = profiler.load_profiler_result("./profiler_log/trainer.trace.json")
assert again.summary() == result.summary()
print(again.summary(views=[profiler.SummaryView.OperatorView]))
