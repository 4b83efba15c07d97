"""Tune stage, inside the search loop: a candidate source's own engine (CompileIQ's ask/tell) as one more
proposal source of the Advanced Controls dimension, inside our search and its budget. Once every control
file of the dimension so far has been measured (alone, or on the search's pivot), the engine is told each
file's best loss (log ratio to the baseline; an invalid trial: infinite) and asked for its next generation,
which joins the dimension (stored by content; the trials screen it: a ptxas crash is an invalid trial with
its reason, the same code as another shares its measurement). At most `generations` times; said in one line
each time."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..flags.acf import ACF_DIMENSION, AcfFile, Candidates, acf_path, store
from ..model.errors import CompileIQError
from ..model.events import Log, as_stream
from ..model.records import Trial
from ..search.search import FlagSearch

GENERATIONS = 3  # the engine's generations after the first (the sample), at most


@dataclass
class AcfEngine:
    """Drives `candidates.source` (which has an engine) from the search loop's results; `folder`: where new
    candidates are stored (beside the first ones)."""

    candidates: Candidates
    folder: Path
    log: Log
    generations: int = GENERATIONS
    done: int = 0

    @staticmethod
    def of(candidates: Candidates | None, log: Log) -> AcfEngine | None:
        if candidates is None or candidates.source is None or not candidates.files:
            return None
        return AcfEngine(candidates, candidates.files[0].path.parent, log)

    @staticmethod
    def _scores(trials: dict[str, Trial], loss_of: Callable[[Trial], float]) -> dict[Path, float]:
        """Per control file measured so far, its best loss over the trials that used it."""
        best: dict[Path, float] = {}
        for trial in trials.values():
            for flag in trial.flagset.flags:
                path = acf_path(flag)
                if path is not None:
                    loss = loss_of(trial) if trial.valid else math.inf
                    best[Path(path)] = min(best.get(Path(path), math.inf), loss)
        return best

    def after(self, search: FlagSearch, trials: dict[str, Trial], loss_of: Callable[[Trial], float]) -> int:
        """Called after each result: when no control file waits for its measurement, the engine's next
        generation joins the search. How many values were added (0 most of the time)."""
        if (
            self.done >= self.generations
            or ACF_DIMENSION not in [d.name for d in search.space.dimensions]
            or search.waiting(ACF_DIMENSION)
        ):
            return 0
        source = self.candidates.source
        assert source is not None
        scores = {path.read_bytes(): loss for path, loss in self._scores(trials, loss_of).items() if path.is_file()}
        if not any(math.isfinite(v) for v in scores.values()):
            return 0  # nothing measured to tell (the search has not reached the control files)
        self.done += 1
        try:
            source.tell(scores)
            fresh = source.ask(len(self.candidates.files))
            files: list[AcfFile] = [
                store(data, self.folder, f"engine generation {self.done + 1}", source.kind) for data in fresh
            ]
        except CompileIQError as exc:
            self.done = self.generations
            as_stream(self.log).note(
                f"advanced controls: the candidate source's engine stopped ({exc}); the "
                "search goes on with the candidates it has"
            )
            return 0
        added = search.extend(ACF_DIMENSION, [(f.token,) for f in files])
        faster = sum(1 for v in scores.values() if v < 0)
        as_stream(self.log).info(
            f"advanced controls: {source.label.split(' search space')[0]}'s engine was told {len(scores)} "
            f"measured control files ({faster} faster than the project's own build) and proposed {len(files)}; "
            f"{added} new (generation {self.done + 1} of at most {self.generations + 1})"
        )
        return added
