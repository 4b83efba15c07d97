import math

import pytest

from compileiq_cmake.flags import load_space
from compileiq_cmake.search.search import FlagSearch


def _synthetic_loss(flags: tuple[str, ...]) -> float:
    """A known landscape: -O3 and -funroll-loops help, -fvect-cost-model=cheap hurts (no big mover:
    every single gain is below BIG_GAIN)."""
    gain = {"-O3": 0.09, "-funroll-loops": 0.05, "-fvect-cost-model=cheap": -0.2, "-march=native": 0.03}
    return -sum(gain.get(f, 0.0) for f in flags)


@pytest.mark.unit
def test_search_never_proposes_a_flag_set_twice_and_finds_the_known_best():
    space = load_space("gcc", "GNU", "12.2", include=("opt_level", "unroll_loops", "vect_cost_model", "march_native"))
    assert space.size == 36
    search = FlagSearch(space, budget=30, seed=1, workers=2)
    search.tell(space.baseline(), 0.0)
    seen = {space.baseline().key}
    best = 0.0
    for _ in range(35):
        batch = [search.ask(), search.ask()]
        for fs in batch:
            if fs is None:
                continue
            assert fs.key not in seen, f"{fs.flags} proposed twice"
            seen.add(fs.key)
            loss = _synthetic_loss(fs.flags)
            best = min(best, loss)
            search.tell(fs, loss)
    assert len(seen) == 36, "an exhaustible space must be exhausted, not looped on"
    assert math.isclose(best, -0.17)  # -O3 -funroll-loops -march=native
    assert search.ask() is None


@pytest.mark.unit
def test_same_seed_same_proposals():
    space = load_space("nvcc", "NVIDIA", "13.0")
    runs = []
    for _ in range(2):
        s = FlagSearch(space, budget=20, seed=7, workers=1)
        s.tell(space.baseline(), 0.0)
        seq = []
        for _ in range(10):
            fs = s.ask()
            seq.append(fs.flags)
            s.tell(fs, float(len(fs.flags)))
        runs.append(seq)
    assert runs[0] == runs[1]


@pytest.mark.unit
def test_warm_start_flag_sets_come_first_and_foreign_flags_are_ignored():
    from compileiq_cmake.model.records import FlagSet

    space = load_space("gcc", "GNU", "12.2", include=("opt_level", "unroll_loops", "vect_cost_model", "march_native"))
    good = space.flagset_from_flags(["-O3", "-funroll-loops"])
    foreign = FlagSet(choices=(), flags=("-O3", "-fno-such-flag"))  # from another target: only -O3 maps
    search = FlagSearch(space, budget=30, seed=0, workers=1, warm_start=[good, foreign, space.baseline()])
    search.tell(space.baseline(), 0.0)
    first, second = search.ask(), search.ask()
    assert first.key == good.key
    assert second.key == space.flagset_from_flags(["-O3"]).key
    third = search.ask()
    assert len(third.choices) == 1, "then single-flag changes"


@pytest.mark.unit
def test_single_flag_changes_then_the_best_combination():
    space = load_space("gcc", "GNU", "12.2", include=("opt_level", "unroll_loops", "vect_cost_model", "march_native"))
    search = FlagSearch(space, budget=30, seed=2, workers=1)
    search.tell(space.baseline(), 0.0)
    singles = sum(len(d.values) - 1 for d in space.dimensions)
    proposed = []
    for _ in range(singles + 1):
        fs = search.ask()
        proposed.append(fs)
        search.tell(fs, _synthetic_loss(fs.flags))
    assert all(len(fs.choices) == 1 for fs in proposed[:singles])
    assert set(proposed[singles].flags) == {"-O3", "-funroll-loops"}, "the two best singles combined next"


def _big_mover_run(space, seed, **kw):
    def loss(flags):
        fast = "-ffast-math" in flags
        pair = "-funroll-loops" in flags and "-march=native" in flags
        return -(0.34 * fast + 0.26 * (fast and pair))

    search = FlagSearch(space, budget=30, seed=seed, workers=1, **kw)
    search.tell(space.baseline(), 0.0)
    sequence = []
    for _ in range(29):
        fs = search.ask()
        sequence.append(fs)
        search.tell(fs, loss(fs.flags))
    return sequence


@pytest.mark.unit
def test_a_big_mover_is_kept_while_the_other_dimensions_are_drawn_at_random_a_bounded_number_of_times():
    """-ffast-math is 40% faster alone (a big mover); with it, -funroll-loops and -march=native are worth
    30% only together. As soon as the fast-math single is measured, every 2nd proposal keeps fast math and
    draws the other dimensions (still inside the single-flag phase), at most BIG_MAX times; with
    big_gain=0 (the search before this rule) the single-flag phase is not interrupted. (The pivot, tested
    below, is off here so that every multi-flag proposal of the single-flag phase is a draw.)"""
    from compileiq_cmake.search.search import BIG_MAX

    space = load_space(
        "gcc",
        "GNU",
        "12.2",
        include=("fast_math", "unroll_loops", "march_native", "opt_level", "vect_cost_model", "ipa_pta"),
    )
    singles = sum(len(d.values) - 1 for d in space.dimensions)
    checked = 0
    for seed in range(10):
        for kw, interrupted in (({"pivot": False}, True), ({"big_gain": 0.0}, False)):
            sequence = _big_mover_run(space, seed, **kw)
            at = next(i for i, fs in enumerate(sequence) if fs.flags == ("-ffast-math",))
            if at > singles - 3:
                continue  # fast math came last among the singles: nothing left to interrupt
            draws = [fs for fs in sequence if "-ffast-math" in fs.flags and len(fs.choices) >= 2]
            early = [fs for fs in sequence[at + 1 : at + 3] if len(fs.choices) >= 2]
            if interrupted:
                checked += 1
                assert early and "-ffast-math" in early[0].flags, [fs.flags for fs in sequence[: at + 3]]
                assert len([fs for fs in sequence[: singles + BIG_MAX] if len(fs.choices) >= 2]) <= BIG_MAX
            else:
                assert not early and all(len(fs.choices) == 1 for fs in sequence[:singles])
            assert draws
    assert checked >= 5


@pytest.mark.unit
def test_after_a_big_mover_the_remaining_singles_are_measured_on_top_of_it():
    """Pivot (default): once -ffast-math is known to be 40% faster alone, every later single-flag change is
    proposed together with it; before that, and with pivot=False, singles are alone. The bounded draws of
    the big-mover rule still come every 2nd proposal."""
    from compileiq_cmake.search.search import BIG_MAX

    space = load_space(
        "gcc",
        "GNU",
        "12.2",
        include=("fast_math", "unroll_loops", "march_native", "opt_level", "vect_cost_model", "ipa_pta"),
    )
    singles = sum(len(d.values) - 1 for d in space.dimensions)
    pivoted = 0
    for seed in range(10):
        sequence = _big_mover_run(space, seed)
        at = next(i for i, fs in enumerate(sequence) if fs.flags == ("-ffast-math",))
        assert all(len(fs.choices) == 1 for fs in sequence[:at]), "alone until the big mover is measured"
        after = sequence[at + 1 : singles + BIG_MAX]
        on_top = [fs for fs in after if "-ffast-math" in fs.flags and len(fs.choices) == 2]
        alone = [fs for fs in after if "-ffast-math" not in fs.flags]
        assert not alone, [fs.flags for fs in alone]
        pivoted += len(on_top)
        plain = _big_mover_run(space, seed, pivot=False)
        assert [fs.flags for fs in plain[: at + 1]] == [fs.flags for fs in sequence[: at + 1]]
    assert pivoted >= 10


@pytest.mark.unit
def test_values_that_relax_numerics_are_measured_first():
    """numerics_first (default): the single-flag phase starts with the catalogue's relaxes_numerics values
    (gcc: -ffast-math), in a seeded order within each part; numerics_first=False keeps one seeded order."""
    space = load_space(
        "gcc",
        "GNU",
        "12.2",
        include=("fast_math", "unroll_loops", "march_native", "opt_level", "vect_cost_model", "ipa_pta"),
    )
    assert [d.name for d in space.dimensions if d.relaxes_numerics] == ["fast_math"]
    positions = {True: [], False: []}
    for seed in range(12):
        for first in (True, False):
            search = FlagSearch(space, budget=30, seed=seed, workers=1, numerics_first=first)
            search.tell(space.baseline(), 0.0)
            flags = []
            for _ in range(3):
                fs = search.ask()
                search.tell(fs, 0.0)  # no big mover: the singles phase runs in its order
                flags.append(fs.flags)
            positions[first].append(flags.index(("-ffast-math",)) if ("-ffast-math",) in flags else 99)
    assert positions[True] == [0] * 12
    assert any(p != 0 for p in positions[False])


@pytest.mark.unit
def test_no_stall_when_the_optimizer_only_proposes_known_points():
    """Hardening (issue 10): the fallback for an unseen point enumerated up to 200,000 points at ~2.6 ms
    each (the catalogue re-parsed per flag set): minutes of stall. Flag sets are cheap now and big spaces
    are not enumerated; a full space answers at once."""
    import random
    import time

    from compileiq_cmake.flags import load_space
    from compileiq_cmake.search.search import _unseen_fallback

    space = load_space("nvcc", "NVIDIA", "13.0")
    assert space.size > 100_000
    started = time.perf_counter()
    assert _unseen_fallback(space, random.Random(0), lambda key: True) is None
    assert time.perf_counter() - started < 20, "a generous bound for a loaded CI machine; it was minutes"
    started = time.perf_counter()
    for _ in range(500):
        space.flagset({"use_fast_math": 1, "restrict": 1})
    assert time.perf_counter() - started < 5, "500 flag sets took 1.3 s of TOML parsing before"
