"""Reading a JSON file someone else may have written (a landscape, an imported prior): bounded in size, with
no NaN or Infinity (not JSON, and poison for every statistic), and nested no deeper than Python can parse;
anything else is one line naming the file and what is wrong (UsageError, exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

from ..model.errors import UsageError
from ..model.reading import read_regular_text

MAX_JSON_BYTES = 64 << 20  # the largest landscape shipped is under 2 MiB


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(path: Path | str, what: str, max_bytes: int = MAX_JSON_BYTES) -> object:
    """The document of `path`; `what` names the option it came from in the one-line error ("--replay x.json")."""
    text = read_regular_text(path, max_bytes, what, UsageError, "JSON file")  # no pipe, device or unbounded read
    try:
        return json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise UsageError(f"{what}: nested too deeply to be read") from None
    except ValueError as exc:
        raise UsageError(f"{what}: not valid JSON ({exc})") from None
