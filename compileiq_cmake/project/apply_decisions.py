"""What the CMake module decided for a variant tree's tuned target at its last configure (`ApplyDecisions`,
read from what compileiq_variant.cmake recorded): the apply rules live in the CMake module only; the tool
reads their outcome instead of re-deriving them."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ApplyDecisions:
    """What the CMake module decided for the tuned target at a variant tree's last configure, read from
    compileiq_variant_info.txt (its keys: "Files Read by the Tool" in cmake/CompileIQ.cmake). The apply rules
    (build type, architectures, relocatable device code, device LTO, CMAKE_<LANG>_FLAGS[_<CONFIG>]) live in the
    CMake module only; the tool reads their outcome here instead of re-deriving them."""

    config: str  # the configuration the tree builds: the entry's build_type, which the apply compares
    flags_sha256: str  # _compileiq_flags_sha256, which the apply compares (stale entries)
    relocatable: bool  # _compileiq_relocatable: the target builds relocatable device code
    device_lto_refusal: str  # _compileiq_device_lto_refusal: why the apply refuses device LTO ("" when it accepts it)
    cuda_archs: tuple[str, ...]  # _compileiq_cuda_archs of the project's own build (before a tree forces its own)
    cuda_archs_every: bool  # they are all / all-major: every entry's architecture matches

    @staticmethod
    def parse(info: dict[str, str], tree: str) -> ApplyDecisions:
        """From compileiq_variant_info.txt's keys; a tree that recorded none refuses device LTO with a reason."""
        return ApplyDecisions(
            config=info.get("config", ""),
            flags_sha256=info.get("flags_sha256", ""),
            relocatable=info.get("relocatable") == "1",
            device_lto_refusal=info.get(
                "device_lto_refusal", f"the variant tree {tree} recorded no device-LTO decision"
            ),
            cuda_archs=tuple(a for a in info.get("cuda_archs", "").split(",") if a),
            cuda_archs_every=info.get("cuda_archs_every") == "1",
        )

    def applies_to_arch(self, arch: str) -> bool:
        """Whether the apply matches an entry of CUDA architecture `arch` with this build (its list, as the module
        decided it)."""
        return self.cuda_archs_every or arch in self.cuda_archs
