"""A thinking model's reasoning, told apart from its answer.

A reasoning model (Qwen3, Qwen3.5) thinks before it answers. A vLLM server started with a reasoning
parser returns the thinking in its own message field (``reasoning`` in vLLM 0.33, ``reasoning_content``
before it) and counts it in ``usage.completion_tokens_details.reasoning_tokens``; without a parser the
thinking stays in the content, as a ``<think>...</think>`` block before the answer. Qwen3's chat
template opens ``<think>`` itself, so the content may hold only ``...</think>answer``; and a reply cut
by the token limit while thinking holds ``<think>...`` with no close and no answer at all.
"""

from __future__ import annotations

import math
import re

CLOSE = "</think>"
REASONING_FIELDS = ("reasoning", "reasoning_content")
"""Message fields a server may put the reasoning in: vLLM 0.33's name first, then the older one."""
_CHARS_PER_TOKEN = 4.0
"""For an estimate of reasoning tokens when the server does not count them: English BPE runs near 4."""
_LEADING_OPEN = re.compile(r"^\s*<think>", re.IGNORECASE)


def split_reasoning(content: str) -> tuple[str, str]:
    """``(reasoning, answer)`` of a reply's content: the think block taken out, the answer that follows it.

    Content with no think block is all answer. ``<think>`` with no close (the limit cut the thinking)
    is all reasoning; a close with no opening (the template opened it) ends the reasoning there.
    """
    opened = _LEADING_OPEN.match(content)
    body = content[opened.end() :] if opened else content
    close = body.lower().find(CLOSE)
    if close >= 0:
        return body[:close].strip(), body[close + len(CLOSE) :].strip()
    if opened:
        return body.strip(), ""
    return "", content


def field_reasoning(message_fields: dict[str, object]) -> str:
    """The reasoning a server returned in a message field of its own (empty when there is none)."""
    for name in REASONING_FIELDS:
        value = message_fields.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def estimate_tokens(text: str) -> int:
    """Tokens in ``text``, estimated from its length (for servers that do not report reasoning tokens)."""
    return math.ceil(len(text) / _CHARS_PER_TOKEN) if text else 0
