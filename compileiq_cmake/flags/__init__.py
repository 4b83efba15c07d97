"""Flag spaces as data, one per compiler family (``nvcc.toml``, ``gcc.toml``), and the flag grammar."""

from .space import Dimension, FlagSpace, family_for_compiler, load_space, validate_flags

__all__ = ["Dimension", "FlagSpace", "load_space", "validate_flags", "family_for_compiler"]
