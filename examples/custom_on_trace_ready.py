"""A custom on_trace_ready: export each recorded window and print its summary.

on_trace_ready receives the Profiler; prof.profiler_result is the window that
just ended. Here every window is written as a Chrome trace and as a .pktrace
file (reloadable with profkit.load_profiler_result), then summarized.
"""

import profkit as profiler
from numpy_mlp import TwoLayerMLP, random_batches

model = TwoLayerMLP()


def train_step(x, y):
    """The model's step, with its phases marked for the Model summary."""
    with profiler.RecordEvent("forward", profiler.TracerEventType.Forward):
        h, logits = model.forward(x)
    with profiler.RecordEvent("backward", profiler.TracerEventType.Backward):
        grads = model.backward(x, y, h, logits)
    with profiler.RecordEvent("sgd", profiler.TracerEventType.Optimization):
        model.sgd(grads)


chrome = profiler.export_chrome_tracing("./profiler_log")
binary = profiler.export_protobuf("./profiler_log")


def my_on_trace_ready(prof):
    chrome(prof)
    binary(prof)
    prof.summary(sorted_by=profiler.SortedKeys.CPUTotal, views=[profiler.SummaryView.OverView, profiler.SummaryView.ModelView])


scheduler = profiler.make_scheduler(closed=1, ready=1, record=2, repeat=2)
with profiler.Profiler(scheduler=scheduler, on_trace_ready=my_on_trace_ready) as prof:
    for x, y in random_batches(10):
        train_step(x, y)
        prof.step()

print(f"written: {chrome.paths + binary.paths}")
