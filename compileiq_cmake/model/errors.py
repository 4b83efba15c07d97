"""User-facing errors: one line that says what is wrong and how to fix it; the CLI exits 2."""


class CompileIQError(Exception):
    """A problem with the user's input or environment, reported as one line (exit status 2)."""
