r"""Usage as a vLLM server serving Qwen2.5-VL or Qwen3-VL counts it: prompt tokens, cached tokens (simulated).

The prompt is laid out as the Qwen chat templates lay it out: each message ``<|im_start|>ROLE\n``, its content,
``<|im_end|>\n``, the prompt ending ``<|im_start|>assistant\n``; an image ``<|vision_start|>``, its visual tokens,
``<|vision_end|>``; text parts next to each other are one text. Text is cut as Qwen's tokenizer pre-splits it; BPE
keeps most words whole, so a word counts one token per 8 letters and a run of symbols one per 2 (within 4% of the
real count on prose and on the agents' prompts: ``conformance/prefix_cache.py``).

An image costs ``(h'/P) * (w'/P)`` tokens for P-pixel tokens (28: Qwen2.5-VL, 32: Qwen3-VL), ``h' x w'`` its size
after transformers' ``smart_resize``: each side rounded to a multiple of P, then scaled down to the processor's
``max_pixels`` (sides floored) or up to its ``min_pixels`` (sides ceiled). Its tokens carry the image's hash.

The prefix cache follows vLLM's automatic prefix caching: full blocks of 16 tokens, each block's hash chaining the
previous one's; a request's cached tokens are its leading blocks already cached; blocks are evicted least recently
used, a prompt's tail before its head (vLLM frees a request's blocks in reverse). The last token is always computed.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence

BLOCK = 16
WORD_LETTERS = 8
"""Letters per token of a word (most words are one token; long and rare ones split)."""
SYMBOLS = 2
"""Symbols per token of a run of symbols (``",``, ``}]``, ``):`` are single tokens)."""
MAX_IMAGE_TOKENS = 16384
"""The image processors' ``max_pixels`` in tokens: 12,845,056 px for Qwen2.5-VL, 16,777,216 px for Qwen3-VL."""
MIN_IMAGE_TOKENS = {28: 4, 32: 64}
"""Their ``min_pixels`` in tokens, by token side: 56 x 56 px for Qwen2.5-VL, 256 x 256 px for Qwen3-VL."""

# Qwen2's pre-tokenizer pattern in Python's classes: [^\W\d_] is a letter, [^\s\w]|_ a symbol.
_PRETOKEN = re.compile(
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)"
    r"|(?P<word>(?P<lead>[^\r\n\w]|_)?[^\W\d_]+)"
    r"|\d"
    r"|(?P<symbols> ?(?:[^\s\w]|_)+)[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


def text_pieces(text: str) -> list[str]:
    """Approximate BPE tokens of ``text``; joined, they are ``text`` again."""
    pieces: list[str] = []
    for match in _PRETOKEN.finditer(text):
        piece = match.group(0)
        if match.group("word"):
            pieces.extend(_cut(piece, 1 if match.group("lead") else 0, len(piece), WORD_LETTERS))
        elif match.group("symbols"):
            pieces.extend(_cut(piece, 1 if piece[0] == " " else 0, match.end("symbols") - match.start(), SYMBOLS))
        else:
            pieces.append(piece)
    return pieces


def _cut(piece: str, start: int, end: int, size: int) -> list[str]:
    """``piece`` cut every ``size`` characters from ``start`` to ``end`` (what lies outside goes with its neighbour)."""
    bounds = [0, *range(start + size, end, size), len(piece)]
    return [piece[a:b] for a, b in itertools.pairwise(bounds)]


def image_token_count(width: int, height: int, patch: int = 28) -> int:
    """Visual tokens of one image, resized as the Qwen2-VL image processor resizes it (see the module doc)."""
    min_pixels = MIN_IMAGE_TOKENS.get(patch, 4) * patch * patch
    max_pixels = MAX_IMAGE_TOKENS * patch * patch
    h, w = round(height / patch) * patch, round(width / patch) * patch  # round() as smart_resize's: half to even
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(patch, math.floor(height / beta / patch) * patch)
        w = max(patch, math.floor(width / beta / patch) * patch)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h, w = math.ceil(height * beta / patch) * patch, math.ceil(width * beta / patch) * patch
    return (h // patch) * (w // patch)


Part = str | tuple[str, int, int]
"""One part of a message: its text, or an image as ``(sha256, width, height)``."""


def prompt_tokens(turns: Iterable[tuple[str, Sequence[Part]]], patch: int = 28) -> list[str]:
    """The token sequence of a prompt: ``turns`` are the messages in order, each ``(role, parts)``."""
    tokens: list[str] = []
    for role, parts in turns:
        tokens.extend(("<|im_start|>", role, "\n"))
        text = ""
        for part in parts:
            if isinstance(part, str):
                text += part
                continue
            tokens.extend(text_pieces(text))
            text = ""
            sha, width, height = part
            tokens.append("<|vision_start|>")
            tokens.extend(f"<img:{sha}:{i}>" for i in range(image_token_count(width, height, patch)))
            tokens.append("<|vision_end|>")
        tokens.extend((*text_pieces(text), "<|im_end|>", "\n"))
    tokens.extend(("<|im_start|>", "assistant", "\n"))
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
        """Cached tokens for this prompt; then remember its blocks (most recently used, its head most of all)."""
        hashes = self.block_hashes(tokens)
        with self._lock:
            hit_blocks = next((n for n, h in enumerate(hashes) if h not in self._blocks), len(hashes))
            cached = hit_blocks * BLOCK
            if cached >= len(tokens):  # the last token is always computed
                cached = max(0, cached - BLOCK)
            for h in reversed(hashes):  # as vLLM frees a request's blocks: its tail is evicted first
                self._blocks[h] = None
                self._blocks.move_to_end(h)
            while len(self._blocks) > self.capacity:
                self._blocks.popitem(last=False)
            self.queries += len(tokens)
            self.hits += cached
        return cached
