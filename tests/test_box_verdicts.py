"""Issue 51: a validation whose rounds the time box decided is never stored as a rejection. The box either cuts
the rounds short or places the last look before --max-rounds (Limits.max_rounds); a verdict left open at that
look was a "rejected" in the trial store, restored by every later tune (a fresh tree with 18 rounds accepted
the same candidate at 1.0638x), and no TOML said it was untested."""

from __future__ import annotations

import pytest

from compileiq_cmake.decide.decided import ValidationContext
from compileiq_cmake.decide.decided import validated as _validated
from compileiq_cmake.decide.validation import CUT, validate
from compileiq_cmake.flags.space import Dimension, FlagSpace
from compileiq_cmake.model.events import recording
from compileiq_cmake.model.records import BuildResult, FlagSet

from test_hardening_validation import _setup

pytestmark = pytest.mark.unit
CANDIDATE = FlagSet((("a", 1),), ("-a",))


def _build(tree, flagset) -> BuildResult:
    return BuildResult(ok=True, seconds=0.0)


class _Store:
    def __init__(self) -> None:
        self.saved: dict[str, list] = {}

    def load_validations(self, name: str):
        return self.saved.get(name)

    def save_validations(self, name: str, values) -> None:
        self.saved[name] = values


@pytest.mark.parametrize("seed", range(4))
def test_a_verdict_left_open_at_the_boxs_last_look_is_undecided_and_not_stored(tmp_path, seed):
    fake, trees = _setup(tmp_path, {"t0": 1.0, "t1": 0.997})  # 0.3% faster, 0.2% noise: 6 rounds cannot tell
    fake.rng.seed(seed)
    events, _ = recording()
    space = FlagSpace("gcc", (Dimension("a", "", ((), ("-a",))),))
    store = _Store()
    context = ValidationContext(trees=trees, space=space, seed=seed)
    (v,) = _validated(context, _build, fake, [CANDIDATE], 0.001, seed, events, store, max_rounds=6)
    assert not v.accepted and v.reason.startswith(CUT), v.reason
    assert "the time box ended the validation after 6 rounds" in v.reason
    assert store.saved == {}  # a later tune with more time decides it


def test_without_a_box_the_same_rounds_are_a_decision(tmp_path):
    fake, trees = _setup(tmp_path, {"t0": 1.0, "t1": 1.02})  # slower: decided at any horizon
    events, _ = recording()
    (v,) = validate(fake, _build, trees, FlagSet((), ()), [CANDIDATE], 0.001, 1, events, max_rounds=6)
    assert not v.accepted and not v.reason.startswith(CUT), v.reason
