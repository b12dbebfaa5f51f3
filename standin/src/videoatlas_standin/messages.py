"""A chat request's messages as the stand-in takes them: texts by role, images (not yet decoded), prompt tokens.

:func:`read_prompt` serves the chat route and ``conformance/prefix_cache.py`` alike: the tokens checked against
vLLM's prefix caching there are the tokens the server counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from videoatlas_standin.perception import EncodedImage, decode_data_url
from videoatlas_standin.tokens import Part, prompt_tokens


@dataclass(frozen=True, slots=True)
class Prompt:
    """What one chat request's messages hold, for the policy and for usage."""

    texts: list[tuple[str, str]]
    """Every text part, with the role that sent it, in order."""
    images: list[EncodedImage]
    """Every image, in order, its pixels not yet decoded."""
    tokens: list[str]
    """The prompt as the stand-in counts and caches it (:func:`.tokens.prompt_tokens`)."""


def read_prompt(messages: Any, patch: int) -> Prompt:
    """The texts, images and prompt tokens of a request's ``messages`` (``patch``: pixels per visual token side).

    Raises ValueError, with the reason, for messages vLLM would not take (a part or an image it cannot read).
    """
    if not isinstance(messages, list):
        raise ValueError("'messages' must be a list")
    texts: list[tuple[str, str]] = []
    images: list[EncodedImage] = []
    turns: list[tuple[str, list[Part]]] = []
    for message in messages:
        if not isinstance(message, dict):
            raise ValueError("every message must be an object")
        role = str(message.get("role", "user"))
        content = message.get("content")
        # Its own earlier calls count in the prompt; what they returned is read from the tool messages.
        parts: list[Part] = list(_calls_of(message))
        turns.append((role, parts))
        if content is None:  # an assistant turn that only called tools
            continue
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        if not isinstance(content, list):
            raise ValueError("message content must be a string or a list of parts")
        for part in content:
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append((role, str(part.get("text", ""))))
                parts.append(texts[-1][1])
            elif kind == "image_url":
                url = (part.get("image_url") or {}).get("url", "")
                try:
                    img = decode_data_url(url)
                except (ValueError, OSError) as exc:
                    raise ValueError(f"cannot read image: {exc}") from None
                images.append(img)
                parts.append((img.sha256, img.width, img.height))
            else:
                raise ValueError(f"unsupported content part type {kind!r}")
    return Prompt(texts, images, prompt_tokens(turns, patch))


def _calls_of(message: dict[str, Any]) -> list[str]:
    """An assistant message's tool calls as text (``name({arguments})``)."""
    calls = message.get("tool_calls")
    out = []
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function") if isinstance(call, dict) else None
        if isinstance(function, dict):
            out.append(f"{function.get('name')}({function.get('arguments') or ''})")
    return out
