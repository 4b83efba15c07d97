"""The user's installed NVIDIA CompileIQ (`pip install 'compileiq-cmake[acf]'`) as a source of Advanced Control
File candidates (acf.CandidateSource): its search space for the tune's ptxas version, resolved by compileiq's
own resolver (offline from the folder `CIQ_SEARCH_SPACES_DIR` names, else downloaded from its releases, which
needs the network), sampled for the initial candidates, and its evolutionary engine driven by ask/tell (its
manual worker: we build and measure, it proposes).

compileiq is imported only here and only when a tune can use it; nothing of it is part of this package."""

from __future__ import annotations

import math
import os
from typing import Any

from ..model.errors import CompileIQError
from .acf import version_tuple

FAILED = "*"  # compileiq's mark of a candidate that failed (its engine replaces it; a number would rank it)
ENGINE_GENERATIONS = 8  # the engine is configured for at most this many (the tune asks fewer: tune.acf_engine)


class AcfUnavailable(CompileIQError):
    """Why compileiq cannot give candidates here (one line, with how to get them)."""


def _import() -> Any:
    try:
        import compileiq.ciq as ciq  # noqa: PLC0415 (optional, heavy: only a tune that offers ACFs imports it)
        from compileiq import types as ciq_types  # noqa: PLC0415
        from compileiq.search_spaces import compilers  # noqa: PLC0415
    except ImportError as exc:
        raise AcfUnavailable(
            f"compileiq is not importable ({exc.msg if hasattr(exc, 'msg') else exc}): "
            "pip install 'compileiq-cmake[acf]' (NVIDIA CompileIQ, under NVIDIA's licence)"
        ) from None
    return ciq, compilers, ciq_types


class CompileIQSource:
    """Candidates from compileiq's search space of `kind` ("ptxas" or "nvcc") for `version` ("13.3.73": the
    major.minor selects the space) and `variant` ("default", "att")."""

    def __init__(self, version: str, variant: str = "default", kind: str = "ptxas", pool: int = 16) -> None:
        ciq, compilers, ciq_types = _import()
        major_minor = ".".join(str(x) for x in version_tuple(version)[:2])
        provider_cls = compilers.PtxasSearchSpace if kind == "ptxas" else compilers.NvccSearchSpace
        offline = os.environ.get("CIQ_SEARCH_SPACES_DIR", "")
        try:
            provider = provider_cls(version=major_minor, variant=variant)
            provider.retrieve()
        except Exception as exc:  # noqa: BLE001 - compileiq's resolver: no space, no network, a bad folder
            how = (
                f"CIQ_SEARCH_SPACES_DIR={offline} holds no usable {kind} {major_minor} '{variant}' space"
                if offline
                else "compileiq could not download it (no network?); offline, point "
                "CIQ_SEARCH_SPACES_DIR at a folder with its manifest.json and the .bin files"
            )
            raise AcfUnavailable(
                f"no CompileIQ search space for {kind} {major_minor} ({variant}): "
                f"{str(exc).splitlines()[0][:160] if str(exc) else type(exc).__name__}; {how}"
            ) from None
        meta = provider.resolution_metadata
        where = (
            f"from {offline} (CIQ_SEARCH_SPACES_DIR)"
            if getattr(meta, "source", "") == "CIQ_SEARCH_SPACES_DIR"
            else f"from compileiq's releases (tag {getattr(meta, 'resolved_tag', '?')}, cached by compileiq)"
        )
        self.kind = kind
        self.label = (
            f"compileiq's {kind} {major_minor} '{variant}' search space {where}, "
            f"sha256 {str(getattr(meta, 'sha256', ''))[:12]}"
        )
        self._types = ciq_types
        try:
            config = ciq_types.SearchConfiguration(
                problem_type="min", generations=ENGINE_GENERATIONS, pool_size=max(pool, 6)
            )
            self._search = ciq.Search(
                objective_function=lambda params: 0.0,
                search_space=provider,
                search_config=config,
                worker_type=ciq_types.WorkerTypes.MANUAL,
                disable_progress_bar=True,
            )
        except Exception as exc:  # noqa: BLE001 - another compileiq version's API, a broken install
            raise AcfUnavailable(
                f"compileiq's search could not be set up ({type(exc).__name__}: "
                f"{str(exc).splitlines()[0][:160] if str(exc) else ''}); compileiq-cmake[acf] "
                "expects compileiq >= 1.1"
            ) from None
        self._pending: dict[bytes, Any] = {}

    def sample(self, n: int) -> list[bytes]:
        """`n` wide samples of the space (compileiq's `Search.sample`), not the engine's first generation: the
        engine draws near the default, and in the side by side on the GPU (docs/benchmarks/acf.md) a wide sample
        in the tune's order reached CompileIQ's best within half its builds in 21 of 50 kernel-seeds, the
        engine's own generations in 13. The engine's generations join later (tune/acf_engine.py)."""
        if n <= 0:
            return []
        try:
            return [bytes.fromhex(str(h)) for h in self._search.sample(n)]
        except Exception as exc:  # noqa: BLE001 - the engine's sampler refused
            raise CompileIQError(f"compileiq's sampler gave no candidates: {exc}") from None

    def ask(self, n: int) -> list[bytes]:
        """The engine's next generation (its own batch size; at most `n` of it are returned, the rest told as
        unmeasured when the next scores are told)."""
        try:
            batch = self._search.ask()
        except Exception as exc:  # noqa: BLE001 - the engine finished or refused
            raise CompileIQError(f"compileiq's engine gave no candidates: {exc}") from None
        out = []
        for cand in batch:
            try:
                data = bytes.fromhex(str(cand.params))
            except ValueError:
                continue  # not a controls file's hex: not a candidate
            self._pending[data] = cand
            out.append(data)
        return out[:n]

    def tell(self, scores: dict[bytes, float]) -> None:
        """Losses of its pending candidates (unmeasured ones: invalid, so the engine moves on)."""
        if not self._pending:
            return
        try:
            from compileiq.utils.validation import Score  # noqa: PLC0415
        except ImportError as exc:
            raise CompileIQError(f"compileiq's Score type is not importable ({exc})") from None
        rows = []
        for data, cand in self._pending.items():
            loss = scores.get(data, float("inf"))
            rows.append(
                Score(
                    score=loss if math.isfinite(loss) else FAILED,
                    param_id=cand.param_id,
                    num_objectives=1,
                )
            )
        try:
            self._search.tell(rows)
        except Exception as exc:  # noqa: BLE001 - the engine refused the scores: said by the caller
            raise CompileIQError(f"compileiq's engine refused the scores: {exc}") from None
        finally:
            self._pending.clear()


def compileiq_source(version: str, variant: str, kind: str, pool: int) -> CompileIQSource:
    """acf.SourceFactory of the user's compileiq (raises AcfUnavailable when it cannot give candidates)."""
    return CompileIQSource(version, variant, kind, pool)
