"""Print vLLM's own requirements, less the GPU-only ones, for a CPU install that can run its request checks.

The conformance target needs vLLM's request model, its sampling parameters and its structured-output
backends, all of which run on a CPU without an engine. vLLM's wheel pins a CUDA build of torch and a set
of GPU kernel packages (several GB) that none of those code paths imports; this script reads the
installed wheel's metadata, keeps every other requirement exactly as vLLM states it (and those of its
``audio`` extra, for the transcription check), and leaves torch to the caller (a CPU build).
"""

from __future__ import annotations

import sys
from importlib.metadata import requires

from packaging.requirements import Requirement

# Packages that only a GPU engine loads (kernels, CUDA runtimes, video decoders on the GPU) and torch's
# own family, which the Makefile installs as a CPU build.
GPU_ONLY = frozenset(
    {
        "torch",
        "torchaudio",
        "torchvision",
        "torchcodec",
        "pynvvideocodec",
        "flashinfer-python",
        "tilelang",
        "nvidia-cudnn-frontend",
        "nvtx",
        "fastsafetensors",
        "instanttensor",
        "nvidia-cutlass-dsl",
        "quack-kernels",
        "tokenspeed-mla",
        "humming-kernels",
    }
)


EXTRAS = ("", "audio")
"""vLLM's own requirements and those of its ``audio`` extra (``pip install vllm[audio]``, what vLLM's docs ask
for to serve speech): the transcription check decodes the client's WAV with vLLM's audio loader, which falls
back from torchcodec (it needs a system FFmpeg) to soundfile."""


def cpu_requirements(dist: str = "vllm") -> list[str]:
    """Return the requirements of ``dist`` and its :data:`EXTRAS` that apply here, less the GPU-only ones."""
    kept: list[str] = []
    for line in requires(dist) or []:
        req = Requirement(line)
        if req.marker is not None and not any(req.marker.evaluate({"extra": extra}) for extra in EXTRAS):
            continue
        if req.name.lower().replace("_", "-") in GPU_ONLY:
            continue
        req.marker = None
        kept.append(str(req))
    return kept


def main() -> int:
    """Write one requirement a line to stdout."""
    sys.stdout.write("".join(f"{line}\n" for line in cpu_requirements()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
