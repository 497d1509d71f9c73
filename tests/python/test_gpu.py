"""GPU tracing control from Python: a reason when it cannot work, a clear
error when asked for anyway, and CPU profiling that carries on."""

import ctypes

import pytest

from profkit import _C, _records

CLOSED, RECORD = 0, 2
USER_DEFINED = 7


def driver_installed():
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def test_gpu_available_answers_with_a_reason():
    available, reason = _C.gpu_available()
    assert isinstance(available, bool)
    assert isinstance(reason, str) and len(reason) > 20
    assert _C.gpu_available() == (available, reason)  # probed once, same answer
    if not driver_installed():
        assert not available
        assert "CUDA driver" in reason or "built without CUPTI headers" in reason


def test_asking_for_gpu_tracing_where_it_cannot_work_raises_and_cpu_goes_on():
    available, reason = _C.gpu_available()
    if available:
        pytest.skip("GPU tracing works here: " + reason)
    with pytest.raises(RuntimeError) as error:
        _C.set_gpu_tracing(True)
    assert reason in str(error.value)
    assert "profiling the CPU only" in str(error.value)
    _C.set_gpu_tracing(False)  # off always works

    _C.set_state(RECORD)
    _C.begin_event_str("cpu work", USER_DEFINED)
    _C.end_event()
    _C.set_state(CLOSED)
    result = _C.collect()
    events = _records.view(result.host_events, _records.HOST_EVENT)
    assert len(events) == 1
    assert len(_records.view(result.device_events, _records.DEVICE_EVENT)) == 0


def test_record_dtypes_match_the_engine_layouts():
    # pk_device_event is 48 bytes: a 52-byte dtype made every GPU column unreadable.
    assert _records.DEVICE_EVENT.itemsize == 48
    assert _records.KERNEL_DETAIL.itemsize == 48
    assert _records.MEMORY_OP_DETAIL.itemsize == 16
    result = _C.collect()
    assert result.device_events.itemsize == _records.DEVICE_EVENT.itemsize
    assert result.kernel_details.itemsize == _records.KERNEL_DETAIL.itemsize
    assert result.memory_op_details.itemsize == _records.MEMORY_OP_DETAIL.itemsize


class FakeCuda:
    """torch.cuda's calls the Profiler makes at a window's end, logged in order with the engine's collect."""

    def __init__(self, log, capturing=False, fails=False):
        self.log, self.capturing, self.fails = log, capturing, fails

    def is_initialized(self):
        return True

    def is_current_stream_capturing(self):
        return self.capturing

    def synchronize(self):
        if self.fails:
            raise RuntimeError("CUDA error: an illegal memory access was encountered")
        self.log.append("synchronize")


@pytest.fixture
def gpu_tracing_on(monkeypatch):
    """The engine's GPU tracing switch accepts, on any machine, and collects are logged."""
    import profkit

    log = []
    monkeypatch.setattr(_C, "gpu_available", lambda: (True, "a GPU of the test's own"))
    monkeypatch.setattr(_C, "set_gpu_tracing", lambda enabled: None)
    collect = _C.collect
    monkeypatch.setattr(_C, "collect", lambda *args: log.append("collect") or collect(*args))

    def use(cuda):
        monkeypatch.setitem(__import__("sys").modules, "torch", type("FakeTorch", (), {"cuda": cuda}))
        return profkit.Profiler(targets=[profkit.ProfilerTarget.CPU, profkit.ProfilerTarget.GPU],
                                scheduler=(1, 3), on_trace_ready=lambda p: None)

    return log, use


def test_a_window_with_gpu_tracing_waits_for_the_gpu_before_it_is_collected(gpu_tracing_on):
    log, use = gpu_tracing_on
    with use(FakeCuda(log)) as prof:
        for _ in range(4):
            prof.step()
    assert log == ["synchronize", "collect"]  # one window, synchronized first


def test_no_synchronize_while_a_stream_is_captured_into_a_cuda_graph(gpu_tracing_on):
    log, use = gpu_tracing_on
    with use(FakeCuda(log, capturing=True)) as prof:
        for _ in range(4):
            prof.step()
    assert log == ["collect"]


def test_a_failing_synchronize_warns_and_the_window_is_still_delivered(gpu_tracing_on):
    import profkit

    log, use = gpu_tracing_on
    with pytest.warns(profkit.ProfilerWarning, match="could not synchronize the GPU.*illegal memory access"):
        with use(FakeCuda(log, fails=True)) as prof:
            for _ in range(4):
                prof.step()
    assert log == ["collect"]
    assert prof.profiler_result is not None
