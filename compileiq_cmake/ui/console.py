"""The console: where a tune's lines go when nobody else takes them (the CLI's `log`)."""

from __future__ import annotations


def print_line(line: str) -> None:
    print(line, flush=True)
