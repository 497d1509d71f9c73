"""Framework integrations: hooks that record a framework's work as profkit events.

Each module imports its framework only when it is used, so ``import profkit``
works without any of them. ``torch_distributed``: torch.distributed's
collectives and point-to-point calls as Communication events.
"""
