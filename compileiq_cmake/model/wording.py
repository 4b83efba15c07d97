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


def untested_line(
    flags: tuple[str, ...] | list[str], harmful: dict[str, tuple[float, float, float]] | None = None
) -> str:
    """The headline's words for written flags no ablation step showed to matter (console, report and `show`
    say the same): which, and for any the search's own trials measured as slower with it (flag -> speedup
    with it and its 95% interval from the search's flag effects), that measurement."""
    one = len(flags) == 1
    line = (
        f"kept untested: {' '.join(flags)} (no ablation step showed {'it matters' if one else 'they matter'}: "
        f"the time limit ended the ablation before {'it' if one else 'them'}, or it never ran)"
    )
    slow = [f"{flag} at {s:.3f}x [{low:.3f}..{high:.3f}]" for flag, (s, low, high) in (harmful or {}).items()]
    if slow:
        line += (
            f"; the search's trials measured {', '.join(slow)} with it: a tune with a longer --time-limit would test it"
        )
    return line


_CONTROL = {c: f"\\x{c:02x}" for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)]} | {
    0x0A: "\\n",
    0x0D: "\\r",
    0x09: "\\t",
    0x2028: "\\u2028",
    0x2029: "\\u2029",
}


def printable(text: object) -> str:
    """Text from a file others wrote, as one line a person reads: every control character escaped (a newline
    in a recorded tool_version, date or device must not forge a line of `show` or `check`, an escape sequence
    must not rewrite the terminal)."""
    return str(text).translate(_CONTROL)
