"""profkit's warning category, so that users can filter profkit's warnings alone."""

__all__ = ["ProfilerWarning"]


class ProfilerWarning(UserWarning):
    """A profiling setup that works, but not as the user probably meant
    (an improper schedule, GPU tracing unavailable, an unsupported option)."""
