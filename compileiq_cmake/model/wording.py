"""Words of the text a user reads: a counted noun in its right number ("1 tuned flag", "2 tuned flags")."""

from __future__ import annotations


def plural(n: int, noun: str, many: str | None = None) -> str:
    """`n` and the noun in the number `n` asks for: `many` is the plural where it is not noun + "s"
    (plural(1, "entry", "entries") -> "1 entry", plural(3, "entry", "entries") -> "3 entries")."""
    return f"{n} {noun if n == 1 else (many or noun + 's')}"


def seconds(x: float) -> str:
    """A number of seconds as a person reads it: whole seconds from 10 s on ("270 s", not "269.998 s"),
    up to two significant digits below ("2.5 s", "0.25 s")."""
    return f"{x:.0f} s" if abs(x) >= 10 else f"{x:.2g} s"
