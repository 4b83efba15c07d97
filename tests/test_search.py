import math

from compileiq_cmake.flags import load_space
from compileiq_cmake.search import FlagSearch


def _synthetic_loss(flags: tuple[str, ...]) -> float:
    """A known landscape: -O3 and -funroll-loops help, -fvect-cost-model=cheap hurts."""
    gain = {"-O3": 0.10, "-funroll-loops": 0.05, "-fvect-cost-model=cheap": -0.2, "-march=native": 0.03}
    return -sum(gain.get(f, 0.0) for f in flags)


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
    assert math.isclose(best, -0.18)
    assert search.ask() is None


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


def test_warm_start_flag_sets_come_first_and_foreign_flags_are_ignored():
    from compileiq_cmake.records import FlagSet

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
