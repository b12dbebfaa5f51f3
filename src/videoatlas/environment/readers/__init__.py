"""Decoding backends behind one interface: a reader executes a frame plan for one video file."""

from __future__ import annotations

from videoatlas.environment.readers.base import ReaderStats, VideoReader, sum_stats
from videoatlas.environment.video import VideoInfo
from videoatlas.errors import BadInputError

__all__ = [
    "BACKENDS",
    "DEFAULT_BACKEND",
    "ReaderStats",
    "VideoReader",
    "open_reader",
    "reader_is_size_bound",
    "sum_stats",
]

BACKENDS = ("pyav", "decord")
DEFAULT_BACKEND = "pyav"
"""PyAV measured faster than decord on every case of ``benchmarks/bench_grid.py`` (see BENCHMARKS.md)."""


def open_reader(backend: str, info: VideoInfo, box: int) -> VideoReader:
    """Open ``info.path`` with the named backend (decord readers are bound to one output size)."""
    if backend == "pyav":
        from videoatlas.environment.readers.pyav_reader import PyAVReader

        return PyAVReader(info)
    if backend == "decord":
        from videoatlas.environment.readers.decord_reader import DecordReader

        return DecordReader(info, box)
    raise BadInputError(f"unknown decoding backend {backend!r}; choose one of {', '.join(BACKENDS)}")


def reader_is_size_bound(backend: str) -> bool:
    """Whether a reader of this backend decodes to one fixed size (and so is pooled per size)."""
    return backend == "decord"
