"""Framework integrations: profkit's hooks into frameworks that run on the engine.

- ``profkit.integrations.torch`` -- PyTorch: operators (a native
  RecordFunction hook, built on first use), Forward/Backward/Optimization
  events and DataLoader batches, in every recording window; with
  torch.distributed, its collectives too. ``enable()`` / ``disable()``.
- ``profkit.integrations.torch_distributed`` -- torch.distributed's
  collectives and point-to-point calls as Communication events with their
  byte counts, and ``instrument_ddp(model)`` for DDP's gradient all-reduces.

Each integration imports without its framework installed and says so
clearly only when used.
"""
