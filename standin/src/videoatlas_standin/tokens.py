"""Usage accounting like a vLLM server: prompt tokens, and cached tokens from simulated prefix caching.

Text is split into approximate BPE pieces (short runs of letters or digits, single symbols).
Each image costs ``ceil(w/P) * ceil(h/P)`` tokens for P-pixel patches (28 for Qwen2.5-VL, 32 for
Qwen3-VL), and its tokens carry the image's content hash, so two requests share a prefix only
when they share the same images in the same places.

The prefix cache follows vLLM's automatic prefix caching: the prompt is cut into full blocks of
16 tokens, each block's hash chains the previous block's hash with its own tokens, a request's
cached tokens are the leading blocks already in the cache, and blocks are evicted least recently
used when the cache is full. As in vLLM, at least the last token is always computed.
"""

from __future__ import annotations

import hashlib
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

BLOCK = 16
_PIECE = re.compile(r"[A-Za-z]{1,5}|\d{1,3}|[^\sA-Za-z\d]|\s+")


def text_pieces(text: str) -> list[str]:
    """Approximate BPE tokens of ``text`` (whitespace attaches to the following piece)."""
    pieces: list[str] = []
    pending = ""
    for match in _PIECE.finditer(text):
        piece = match.group(0)
        if piece.isspace():
            pending = " "
            continue
        pieces.append(pending + piece)
        pending = ""
    return pieces


def image_token_count(width: int, height: int, patch: int = 28) -> int:
    """Visual tokens of one image."""
    return math.ceil(width / patch) * math.ceil(height / patch)


def prompt_tokens(parts: Iterable[tuple[str, str | tuple[str, int, int]]], patch: int = 28) -> list[str]:
    """The token sequence of a prompt: ``parts`` are ``(role, text)`` or ``(role, (sha, w, h))`` in order."""
    tokens: list[str] = []
    last_role = None
    for role, content in parts:
        if role != last_role:
            tokens.extend((f"<|{role}|>", "\n"))
            last_role = role
        if isinstance(content, str):
            tokens.extend(text_pieces(content))
        else:
            sha, width, height = content
            tokens.extend(f"<img:{sha}:{i}>" for i in range(image_token_count(width, height, patch)))
    tokens.append("<|assistant|>")
    return tokens


class PrefixCache:
    """A block-hash LRU cache shared by all requests of one server."""

    def __init__(self, capacity_blocks: int = 32768) -> None:
        self.capacity = capacity_blocks
        self._blocks: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()
        self.queries = 0
        self.hits = 0

    @staticmethod
    def block_hashes(tokens: Sequence[str]) -> list[bytes]:
        """Chained hashes of the full blocks of ``tokens``."""
        hashes: list[bytes] = []
        previous = b""
        for start in range(0, len(tokens) - len(tokens) % BLOCK, BLOCK):
            digest = hashlib.blake2b(previous, digest_size=16)
            digest.update("\x1f".join(tokens[start : start + BLOCK]).encode())
            previous = digest.digest()
            hashes.append(previous)
        return hashes

    def lookup_and_insert(self, tokens: Sequence[str]) -> int:
        """Cached tokens for this prompt; then remember its blocks (most recently used)."""
        hashes = self.block_hashes(tokens)
        with self._lock:
            hit_blocks = 0
            for h in hashes:
                if h not in self._blocks:
                    break
                hit_blocks += 1
            cached = hit_blocks * BLOCK
            if cached >= len(tokens):  # the last token is always computed
                cached = max(0, cached - BLOCK)
            for h in hashes:
                self._blocks[h] = None
                self._blocks.move_to_end(h)
            while len(self._blocks) > self.capacity:
                self._blocks.popitem(last=False)
            self.queries += len(tokens)
            self.hits += cached
        return cached
