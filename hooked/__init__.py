"""Hooked: the machinery of a hands-on course on PyTorch hooks.

Kept free of heavy imports: pytest's main process imports this package and must
stay fast, while torch is imported only where checks run.
"""

__version__ = "0.1.0"
