"""Qt-free core of the T2I audit workstation.

Nothing in this package imports Qt, and torch / diffusers / transformers are imported
only inside the functions of the backends that need them.
"""

__version__ = "0.1.0"
