"""What every route of one stand-in server shares: its settings, counters, prefix cache, OCR reader and faults.

Routes (``chat``, ``models``, ``status``) are handed this and nothing else; the server
(:class:`.server.StandinServer`) is one, and wires the routes into its app.
"""

from __future__ import annotations

import random
import threading

from videoatlas_standin import faults
from videoatlas_standin.config import StandinConfig
from videoatlas_standin.perception import Reader, model_threads, shared_reader
from videoatlas_standin.stats import StandinStats
from videoatlas_standin.tokens import PrefixCache


class ServerContext:
    """One stand-in server's state (its routes read and update it)."""

    def __init__(self, config: StandinConfig | None = None, reader: Reader | None = None) -> None:
        self.config = config or StandinConfig()
        model_threads()  # a bad $VIDEOATLAS_STANDIN_THREADS stops the server at its start, not at its first image
        self.stats = StandinStats()
        self.cache = PrefixCache(self.config.cache_blocks)
        self._rng = random.Random(self.config.seed)
        self._reader = reader
        self._reader_lock = threading.Lock()
        self._stopping = threading.Event()

    @property
    def reader(self) -> Reader:
        """The OCR reader: the process's, loaded on first use (model load takes a second or two)."""
        with self._reader_lock:
            if self._reader is None:
                self._reader = shared_reader(self.config.min_text_px)
            return self._reader

    def stop_reading(self) -> None:
        """Give up the OCR reads queued or waiting for the recogniser: the server is stopping."""
        self._stopping.set()

    def stopping(self) -> bool:
        """Whether the server is stopping (OCR reads still waiting then give up)."""
        return self._stopping.is_set()

    def draw_fault(self) -> str | None:
        """The fault to inject into this chat request, if any (counted in ``stats.faults``)."""
        return faults.draw(self.config.faults, self.config.fault_budget, self.stats.faults, self._rng)
