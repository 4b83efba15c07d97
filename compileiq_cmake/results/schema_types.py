"""A TOML value checked against a schema's type annotation and its field metadata (results.schema's
dataclasses): booleans, numbers in range, strings by pattern or choice, arrays as tuples, tables by their own
schema; _table checks a whole table against a dataclass and names unknown, missing and wrong keys."""

from __future__ import annotations

import difflib
import functools
import math
import types
import typing
from collections.abc import Callable
from dataclasses import MISSING, fields, is_dataclass

from ..model.errors import ResultFileError


def plain(value: object) -> object:
    """Tuples to lists, recursively (TOML arrays)."""
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


@functools.cache
def _types(cls: type) -> dict[str, object]:
    return typing.get_type_hints(cls)


def short_repr(value: object) -> str:
    """repr() of a value, cut to 60 characters (for messages)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _number_rule(meta: typing.Mapping) -> str:
    bounds = [
        f"above {meta['above']}" if "above" in meta else "",
        f"at least {meta['min']}" if "min" in meta else "",
        f"at most {meta['max']}" if "max" in meta else "",
    ]
    return " ".join(b for b in bounds if b)


def _in_range(number: float, meta: typing.Mapping) -> bool:
    return (
        ("above" not in meta or number > meta["above"])
        and ("min" not in meta or number >= meta["min"])
        and ("max" not in meta or number <= meta["max"])
    )


def _value(value: object, hint: object, meta: typing.Mapping, what: str, name: str) -> object:
    """value (from TOML) checked against a schema type and its metadata; the typed value (arrays -> tuples)."""

    def wrong(expected: str) -> ResultFileError:
        return ResultFileError(f"{what}: {name} must be {expected}, not {short_repr(value)}")

    if typing.get_origin(hint) in (typing.Union, types.UnionType):  # X | None: TOML has no None, so X
        hint = next(a for a in typing.get_args(hint) if a is not type(None))

    if hint is bool:
        if not isinstance(value, bool):
            raise wrong("true or false")
        return value
    if hint is int or hint is float:
        return _number(value, hint, meta, wrong)
    if hint is str:
        return _string(value, meta, what, name, wrong)
    if typing.get_origin(hint) is tuple:
        return _array(value, hint, meta, what, name, wrong)
    if hint is dict or (isinstance(hint, type) and is_dataclass(hint)):
        return _nested(value, hint, meta, f"{what}: {name}", wrong)
    return value  # a type the schema does not describe further


def _nested(
    value: object, hint: object, meta: typing.Mapping, where: str, wrong: Callable[[str], ResultFileError]
) -> object:
    """A table of the schema: a dict (its rows checked when the metadata names their schema) or a dataclass."""
    if not isinstance(value, dict):
        raise wrong("a table")
    if hint is dict:
        return plain(_table(value, meta["row"], where)) if "row" in meta else value
    assert isinstance(hint, type)  # (a dataclass)
    return hint(**_table(value, hint, where))


def _number(value: object, hint: object, meta: typing.Mapping, wrong: Callable[[str], ResultFileError]) -> object:
    """A number of the schema (int or float): its kind, finiteness and range."""
    finite = hint is int or meta.get("finite", True)
    expected = (
        f"{'a whole number' if hint is int else 'a finite number' if finite else 'a number'} {_number_rule(meta)}"
    )
    if (
        isinstance(value, bool)
        or not isinstance(value, int if hint is int else (int, float))
        or math.isnan(value)
        or (finite and not math.isfinite(value))
        or not _in_range(value, meta)
    ):
        raise wrong(expected.strip())
    return float(value) if hint is float else value


def _string(
    value: object, meta: typing.Mapping, what: str, name: str, wrong: Callable[[str], ResultFileError]
) -> object:
    """A string of the schema: its pattern and its choices."""
    if not isinstance(value, str):
        raise wrong("a string")
    if "pattern" in meta and not meta["pattern"].match(value):
        raise ResultFileError(f"{what}: refusing {name} = {value!r}: not a valid {name.replace('_', ' ')}")
    if "one_of" in meta and value not in meta["one_of"]:
        raise ResultFileError(f"{what}: {name} {value!r} is not one of {', '.join(meta['one_of'])}")
    return value


def _array(
    value: object, hint: object, meta: typing.Mapping, what: str, name: str, wrong: Callable[[str], ResultFileError]
) -> object:
    """An array of the schema (a tuple type: of one type and any length, or of fixed types), as a tuple."""
    args = typing.get_args(hint)
    if not isinstance(value, list):
        raise wrong("an array")
    if len(args) == 2 and args[1] is Ellipsis:
        return tuple(_value(v, args[0], meta, what, f"{name}[{i}]") for i, v in enumerate(value))
    if len(value) != len(args):
        raise wrong(f"an array of {len(args)} values")
    return tuple(_value(v, t, meta, what, f"{name}[{i}]") for i, (v, t) in enumerate(zip(value, args, strict=False)))


def _table(raw: dict[str, typing.Any], cls: type, what: str) -> dict[str, typing.Any]:
    """A TOML table checked against the schema dataclass cls: unknown keys named first (with the known key
    they resemble), then missing ones, then each value's type and range; the typed values by key."""
    known = [f.name for f in fields(cls)]
    unknown = sorted(raw.keys() - set(known))
    if unknown:
        close = {k: difflib.get_close_matches(k, known, 1) for k in unknown}
        named = [repr(k) + (f" (did you mean {close[k][0]!r}?)" if close[k] else "") for k in unknown]
        raise ResultFileError(
            f"{what} has unknown key{'s' if len(unknown) > 1 else ''} {', '.join(named)}"
            + ("" if all(close.values()) else f" (known: {', '.join(known)})")
        )
    missing = [
        f.name for f in fields(cls) if f.name not in raw and f.default is MISSING and f.default_factory is MISSING
    ]
    if missing:
        raise ResultFileError(f"{what} lacks {', '.join(missing)}")
    hints = _types(cls)
    return {f.name: _value(raw[f.name], hints[f.name], f.metadata, what, f.name) for f in fields(cls) if f.name in raw}
