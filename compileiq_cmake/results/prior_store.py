"""The user's own prior data (issue 23): every finished tune adds one observation (its target's features and
the single-value effects it measured) to a local dataset, and the prior a tune uses is the shipped one plus
these. One JSON file per observation under <user cache>/prior/observations/ (the screening cache's
directory: $COMPILEIQ_CACHE_DIR, $XDG_CACHE_HOME/compileiq or ~/.cache/compileiq); a later tune of the same
target (project, target, family, architecture) replaces its file. Opt out per tune with `--no-learn` or
for every tune with COMPILEIQ_NO_LEARN=1; `compileiq-cmake prior` shows, refits, exports and imports it."""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from ..flags.probe import user_cache_dir
from ..model.errors import CompileIQError, UsageError
from ..search.prior import FORMAT, VERSION, Hyper, Observation, PriorModel
from ..system.json_files import load_json
from ..system.writable import check_output

NO_LEARN_VARIABLE = "COMPILEIQ_NO_LEARN"
_SAFE = str.maketrans({c: "_" for c in '/\\:*?"<>| '})


def prior_dir(cache_dir: Path | None = None) -> Path:
    return (cache_dir or user_cache_dir()) / "prior"


def learning_off() -> bool:
    """COMPILEIQ_NO_LEARN set to anything but "", "0" or "no"."""
    return os.environ.get(NO_LEARN_VARIABLE, "").strip().lower() not in ("", "0", "no", "false")


@dataclass(frozen=True)
class LocalPrior:
    """The local dataset: its observations and, after `prior --refit`, the hyper-parameters fitted on the
    shipped plus local observations (refit.json)."""

    root: Path

    @property
    def observations_dir(self) -> Path:
        return self.root / "observations"

    @property
    def refit_path(self) -> Path:
        return self.root / "refit.json"

    def observations(self) -> list[Observation]:
        """Every readable observation (an unreadable file is skipped: a partial write, a newer version); one per
        id, the newest file's (a store written before files carried the id's digest may hold an id twice)."""
        found: dict[str, tuple[float, Observation]] = {}
        for path in sorted(self.observations_dir.glob("*.json")) if self.observations_dir.is_dir() else ():
            try:
                obs = Observation.from_dict(json.loads(path.read_text()), str(path))
                stamp = path.stat().st_mtime
            except (OSError, ValueError, CompileIQError):
                continue
            if obs.id not in found or stamp >= found[obs.id][0]:
                found[obs.id] = (stamp, obs)
        return [obs for _, obs in sorted(found.values(), key=lambda so: so[1].id)]

    def path_of(self, obs_id: str) -> Path:
        """The file of an observation: a readable name and a digest of the whole id (two ids that read alike
        after the unsafe characters are replaced never share a file)."""
        digest = hashlib.sha256(obs_id.encode()).hexdigest()[:12]
        return self.observations_dir / f"{obs_id.translate(_SAFE)[:120]}-{digest}.json"

    def save(self, obs: Observation) -> Path:
        """Write (or replace) one observation atomically; returns its file."""
        self.observations_dir.mkdir(parents=True, exist_ok=True)
        path = self.path_of(obs.id)
        tmp = path.with_name(path.name + f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(obs.as_dict(), indent=1, sort_keys=True) + "\n")
        os.replace(tmp, path)
        return path

    def hyper(self) -> dict[str, Hyper]:
        try:
            doc = json.loads(self.refit_path.read_text())
            return {fam: Hyper.from_dict(h) for fam, h in doc.get("hyper", {}).items()}
        except (OSError, ValueError, AttributeError):
            return {}

    def model(self, shipped: PriorModel | None = None) -> PriorModel:
        """The shipped model plus the local observations, with the local refit's hyper-parameters where a
        `prior --refit` made them."""
        base = shipped if shipped is not None else PriorModel.shipped()
        model = base.with_observations(self.observations())
        model.hyper.update(self.hyper())
        return model

    def refit(self, shipped: PriorModel | None = None) -> dict:
        model = self.model(shipped)
        model.hyper = {}
        report = model.fit()
        self.root.mkdir(parents=True, exist_ok=True)
        tmp = self.refit_path.with_name(self.refit_path.name + ".tmp")
        tmp.write_text(
            json.dumps({"hyper": {f: h.as_dict() for f, h in model.hyper.items()}, "report": report}, indent=1) + "\n"
        )
        os.replace(tmp, self.refit_path)
        return report

    def export(self, path: Path) -> int:
        """The local observations as one prior file (the shipped model's format); returns how many."""
        obs = self.observations()
        if path.exists() and path.is_dir():
            raise UsageError(f"--export {path}: is a directory; give a file name")
        try:  # a new path or an export this tool wrote: never a device, a link or another's file
            check_output(path, "--export", lambda _p, head: f'"format": "{FORMAT}"'.encode() in head, "a prior export")
        except CompileIQError as exc:
            raise UsageError(str(exc)) from None
        if not path.parent.is_dir():
            raise UsageError(
                f"--export {path}: the folder {path.parent} does not exist; create it or give another path"
            )
        try:
            PriorModel(obs, {}, {"made_by": "compileiq-cmake prior --export"}).save(path)
        except OSError as exc:
            raise UsageError(f"--export {path}: cannot write it ({exc.strerror or exc})") from None
        return len(obs)

    def import_file(self, path: Path) -> tuple[int, int, int]:
        """Add another team's exported observations (each replaces a local one of the same id). Returns how
        many were new, how many replaced a different one of the same id, and how many were already there
        as they are (importing a file twice adds nothing, and says so)."""
        doc = load_json(path, f"--import {path}")
        if not isinstance(doc, dict) or doc.get("format") != FORMAT or doc.get("version") != VERSION:
            raise UsageError(
                f"--import {path}: not a compileiq prior (format {FORMAT} version {VERSION}); "
                "give a file written by prior --export"
            )
        try:
            obs = [Observation.from_dict(o, str(path)) for o in doc.get("observations", [])]
        except CompileIQError as exc:
            raise UsageError(f"--import {exc}") from exc
        ids = [o.id for o in obs]
        if len(set(ids)) != len(ids):
            twice = next(i for i in ids if ids.count(i) > 1)
            raise UsageError(
                f"--import {path}: observation id {twice!r} appears {ids.count(twice)} times; each id must "
                "be unique (give a file written by prior --export)"
            )
        added = updated = same = 0
        for o in obs:
            old = self.path_of(o.id)
            before = old.read_text() if old.is_file() else None
            self.save(o)
            if before is None:
                added += 1
            elif before == old.read_text():
                same += 1
            else:
                updated += 1
        return added, updated, same
