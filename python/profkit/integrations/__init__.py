"""Framework integrations: profkit's hooks into frameworks that run on the engine.

- ``profkit.integrations.torch`` -- PyTorch: operators (a native
  RecordFunction hook, built on first use), Forward/Backward/Optimization
  events and DataLoader batches, in every recording window. ``enable()`` /
  ``disable()``.

Each integration imports without its framework installed and says so
clearly only when used.
"""
