"""NumPy dtypes of the engine's frozen record layouts (capi/include/profkit/profkit.h).

They describe the same bytes the engine keeps in memory and writes to
.pktrace files, so result columns are viewed without copying.
"""

import numpy as np

HOST_EVENT = np.dtype(
    [("start_ns", "<u8"), ("end_ns", "<u8"), ("name", "<u4"), ("type", "u1"), ("depth", "u1"), ("flags", "<u2")]
)
EVENT_ARG = np.dtype([("event", "<u8"), ("key", "<u4"), ("kind", "<u4"), ("value", "<i8")])
MEMORY_EVENT = np.dtype(
    [
        ("time_ns", "<u8"),
        ("address", "<u8"),
        ("bytes", "<i8"),
        ("total_allocated", "<u8"),
        ("total_reserved", "<u8"),
        ("thread", "<u4"),
        ("device", "<i4"),
    ]
)
DEVICE_EVENT = np.dtype(
    [
        ("start_ns", "<u8"),
        ("end_ns", "<u8"),
        ("launch_event", "<u8"),
        ("name", "<u4"),
        ("correlation_id", "<u4"),
        ("stream", "<u4"),
        ("context", "<u4"),
        ("device", "<u2"),
        ("type", "u1"),
        ("flags", "u1"),
        ("detail", "<u4"),
    ]
)
KERNEL_DETAIL = np.dtype(
    [
        ("grid", "<u4", (3,)),
        ("block", "<u4", (3,)),
        ("registers_per_thread", "<u4"),
        ("static_shared_memory", "<u4"),
        ("dynamic_shared_memory", "<u4"),
        ("blocks_per_sm", "<f4"),
        ("warps_per_sm", "<f4"),
        ("occupancy", "<f4"),
    ]
)
MEMORY_OP_DETAIL = np.dtype(
    [("bytes", "<u8"), ("value", "<u4"), ("copy_kind", "u1"), ("src_kind", "u1"), ("dst_kind", "u1"), ("_reserved", "u1")]
)

NO_EVENT = np.iinfo(np.uint64).max
HOST_EVENT_INSTANT = 0x1


def view(column, dtype: np.dtype) -> np.ndarray:
    """A read-only structured array over a result column, without copying."""
    if column.itemsize != dtype.itemsize:
        raise RuntimeError(
            f"profkit: record size mismatch ({column.itemsize} bytes in the engine, {dtype.itemsize} in Python); "
            "reinstall profkit so the package and libprofkit.so match"
        )
    return np.frombuffer(column, dtype=dtype)
