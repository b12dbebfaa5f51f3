"""Thread-safe frame access for one video: a pool of readers, an LRU of decoded frames, async wrappers."""

from __future__ import annotations

import asyncio
import os
import threading
from collections import OrderedDict
from collections.abc import Hashable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from typing import Any, Self

import structlog

from videoatlas.environment.geometry import Interval
from videoatlas.environment.readers import (
    DEFAULT_BACKEND,
    ReaderStats,
    VideoReader,
    open_reader,
    reader_is_size_bound,
    sum_stats,
)
from videoatlas.environment.video import DecodedFrame, VideoInfo, probe, video_identity
from videoatlas.errors import BadInputError

log = structlog.get_logger(__name__)

DEFAULT_FRAME_CACHE_BYTES = 256 * 1024 * 1024


class FrameLRU:
    """A byte-bounded LRU of decoded frames, safe to share between threads."""

    def __init__(self, max_bytes: int = DEFAULT_FRAME_CACHE_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Hashable, DecodedFrame] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def get(self, key: Hashable) -> DecodedFrame | None:
        """The cached frame for ``key`` (and mark it recently used), or None."""
        with self._lock:
            frame = self._items.get(key)
            if frame is None:
                self.misses += 1
                return None
            self._items.move_to_end(key)
            self.hits += 1
            return frame

    def put(self, key: Hashable, frame: DecodedFrame) -> None:
        """Store a frame, evicting the least recently used ones beyond the byte budget."""
        if frame.nbytes > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            if old is not None:
                self._bytes -= old.nbytes
            self._items[key] = frame
            self._bytes += frame.nbytes
            while self._bytes > self.max_bytes and self._items:
                _, evicted = self._items.popitem(last=False)
                self._bytes -= evicted.nbytes

    @property
    def nbytes(self) -> int:
        """Bytes held."""
        return self._bytes

    def __len__(self) -> int:
        return len(self._items)


class _ReaderPool:
    """Readers of one video checked out one per thread; at most ``limit`` open at once."""

    def __init__(self, backend: str, info: VideoInfo, limit: int) -> None:
        self.backend = backend
        self.info = info
        self.limit = limit
        self._idle: dict[int | None, list[VideoReader]] = {}
        self._open = 0
        self._cond = threading.Condition()
        self.totals = ReaderStats()
        self._all: list[VideoReader] = []

    def acquire(self, box: int) -> VideoReader:
        slot = box if reader_is_size_bound(self.backend) else None
        with self._cond:
            while True:
                idle = self._idle.get(slot)
                if idle:
                    return idle.pop()
                if self._open < self.limit:
                    self._open += 1
                    break
                if self._evict_idle_other_slot(slot):
                    continue
                self._cond.wait()
        try:
            reader = open_reader(self.backend, self.info, box)
        except BaseException:
            with self._cond:
                self._open -= 1
                self._cond.notify()
            raise
        with self._cond:
            self._all.append(reader)
        return reader

    def _evict_idle_other_slot(self, slot: int | None) -> bool:
        """Close an idle reader bound to another size so this size can open one (lock held)."""
        for other, idle in self._idle.items():
            if other != slot and idle:
                reader = idle.pop()
                self._all.remove(reader)
                reader.close()
                self._open -= 1
                return True
        return False

    def release(self, reader: VideoReader, box: int) -> None:
        slot = box if reader_is_size_bound(self.backend) else None
        with self._cond:
            self._idle.setdefault(slot, []).append(reader)
            self._cond.notify()

    def stats(self) -> ReaderStats:
        with self._cond:
            return sum_stats(reader.stats for reader in self._all)

    def close(self) -> None:
        with self._cond:
            for idle in self._idle.values():
                for reader in idle:
                    reader.close()
            self._idle.clear()
            self._all.clear()
            self._open = 0


class FrameSource:
    """Decoded frames of one video for cells and exact times, cached and safe under concurrent use.

    Blocking methods run the decoder on the calling thread; the ``a*`` methods run it on a thread
    pool so an asyncio event loop is never blocked.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        backend: str = DEFAULT_BACKEND,
        cache: FrameLRU | None = None,
        max_readers: int = 4,
        executor: Executor | None = None,
    ) -> None:
        self.info = probe(path)
        self.identity = video_identity(path)
        self.backend = backend
        if max_readers < 1:
            raise BadInputError("max_readers must be >= 1")
        self.cache = cache if cache is not None else FrameLRU()
        self._pool = _ReaderPool(backend, self.info, max_readers)
        self._past_end = ReaderStats()
        """Windows answered "unavailable" without a reader: they start where the file's frames have ended."""
        self._past_end_lock = threading.Lock()
        self._use_executor(executor, max_readers)
        if self.info.decodable_end is not None:
            log.warning(
                "video_cut_short",
                video=str(path),
                header_duration=round(self.info.duration, 3),
                decodable_until=round(self.info.decodable_end, 3),
            )

    def _use_executor(self, executor: Executor | None, max_readers: int) -> None:
        """Run blocking work on ``executor``, or on a pool of our own (shut down by :meth:`close`)."""
        self._own_executor: ThreadPoolExecutor | None = None
        if executor is None:
            executor = self._own_executor = ThreadPoolExecutor(
                max_workers=max_readers, thread_name_prefix="videoatlas-decode"
            )
        self.executor: Executor = executor
        """Where blocking decode and render work runs for async callers."""

    def _close_executor(self) -> None:
        if self._own_executor is not None:
            self._own_executor.shutdown(wait=True)

    @property
    def duration(self) -> float:
        """Video duration in seconds."""
        return self.info.duration

    def stats(self) -> ReaderStats:
        """Decoder work summed over every reader this source opened (and the cells past the end)."""
        with self._past_end_lock:
            past_end = ReaderStats(unavailable=self._past_end.unavailable)
        return sum_stats([self._pool.stats(), past_end])

    def close(self) -> None:
        """Close readers and the owned thread pool."""
        self._pool.close()
        self._close_executor()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _key(self, kind: str, window: Interval, target: float, box: int) -> tuple[Any, ...]:
        return (self.identity, self.backend, kind, window.start, window.end, target, box)

    def fetch_cells(self, windows: Sequence[Interval], box: int) -> list[DecodedFrame]:
        """One representative frame per window (see :mod:`videoatlas.environment.plan`)."""
        return self._fetch(windows, [w.mid for w in windows], box, "cell", allow_keyframes=True)

    def frames_at(self, times: Sequence[float], box: int) -> list[DecodedFrame]:
        """The exact frame on screen at each time, scaled to fit ``box``."""
        frame_dt = 1.0 / self.info.fps if self.info.fps > 0 else 0.04
        windows = []
        for t in times:
            if not 0 <= t <= self.info.duration:
                raise BadInputError(f"time {t:.3f}s is outside the video (0..{self.info.duration:.3f}s)")
            windows.append(Interval(max(0.0, t - frame_dt), min(self.info.duration, t + frame_dt)))
        return self._fetch(windows, list(times), box, "exact", allow_keyframes=False)

    def _check_request(self, windows: Sequence[Interval], box: int) -> None:
        """Refuse a decode size below 16 px or a window outside the video."""
        if box < 16:
            raise BadInputError(f"frame size must be at least 16 px, got {box}")
        for w in windows:
            if w.start < 0 or w.end > self.info.duration + 1e-6 or w.span <= 0:
                raise BadInputError(f"interval {w} is outside the video (0..{self.info.duration:.3f}s)")

    def _fetch(
        self,
        windows: Sequence[Interval],
        targets: Sequence[float],
        box: int,
        kind: str,
        allow_keyframes: bool,
    ) -> list[DecodedFrame]:
        self._check_request(windows, box)
        out: list[DecodedFrame | None] = []
        missing: list[int] = []
        for i, (w, t) in enumerate(zip(windows, targets, strict=True)):
            if self._past_end_of_frames(w):
                out.append(self._unavailable_past_end(t))
                continue
            hit = self.cache.get(self._key(kind, w, t, box))
            out.append(hit)
            if hit is None:
                missing.append(i)
        if missing:
            reader = self._pool.acquire(box)
            try:
                decoded = reader.fetch(
                    [windows[i] for i in missing], box, [targets[i] for i in missing], allow_keyframes
                )
            finally:
                self._pool.release(reader, box)
            for i, frame in zip(missing, decoded, strict=True):
                out[i] = frame
                if frame.available:
                    self.cache.put(self._key(kind, windows[i], targets[i], box), frame)
        return [f for f in out if f is not None]

    def _past_end_of_frames(self, window: Interval) -> bool:
        """Whether ``window`` starts where a cut file's decodable frames have already ended."""
        end = self.info.decodable_end
        return end is not None and window.start >= end

    def _unavailable_past_end(self, target: float) -> DecodedFrame:
        with self._past_end_lock:
            self._past_end.unavailable += 1
        end = self.info.decodable_duration
        return DecodedFrame(target, None, "unavailable", f"the file's frames end at {end:.2f} s (cut short)")

    async def afetch_cells(self, windows: Sequence[Interval], box: int) -> list[DecodedFrame]:
        """:meth:`fetch_cells` on the decode thread pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self.fetch_cells, list(windows), box)

    async def aframes_at(self, times: Sequence[float], box: int) -> list[DecodedFrame]:
        """:meth:`frames_at` on the decode thread pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self.executor, self.frames_at, list(times), box)
