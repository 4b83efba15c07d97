"""`compileiq-cmake check`'s defaults, apart from its code: the command line's tables read them without importing
the check (its re-measuring and statistics)."""

ROUNDS = 9  # interleaved rounds per workload (--rounds)
MAX_WORKLOADS = 8  # distinct workloads re-measured per entry at most (--max-workloads)
BUILD_TIMEOUT = 3600.0  # seconds for each configure and each build of the check's trees (--build-timeout)
