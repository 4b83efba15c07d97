"""Defaults of the command line that depend on this machine or its environment."""

from __future__ import annotations

import os

from ..model.errors import UsageError


def default_workers() -> int:
    """--workers when not given: $COMPILEIQ_WORKERS, else 1 per 4 CPU cores, at most 4."""
    env = os.environ.get("COMPILEIQ_WORKERS", "")
    if env:
        if not env.isdigit() or int(env) < 1:
            raise UsageError(f"COMPILEIQ_WORKERS={env!r} must be a whole number >= 1")
        return int(env)
    return max(1, min(4, (os.cpu_count() or 1) // 4))
