"""What the stand-in "thinks" before it answers, when it imitates a reasoning model.

The text is an account of the request as the stand-in understood it and of the reply it chose:
how many images it was sent and what it read in them, the question and choices it found, and the
reply itself. Nothing in it depends on who asks or why; it exists so that clients meet reasoning
of a realistic shape and length (in a field of its own, or in ``<think>`` tags before the answer).
"""

from __future__ import annotations

import json
from typing import Any

from videoatlas_standin.language import tokens
from videoatlas_standin.policy import Request

MODES = ("off", "field", "tags")
"""``off``: no reasoning; ``field``: in the reply's reasoning field (vLLM with a reasoning parser);
``tags``: in ``<think>`` tags before the answer (vLLM without a parser)."""
SHOWN_LINES = 6
"""Lines of text read from the images that the reasoning quotes at most."""
SHOWN_CHARS = 400
"""Characters of the chosen reply that the reasoning quotes at most."""


def reasoning_text(request: Request, value: Any) -> str:
    """The stand-in's reasoning about ``request``, ending with the reply ``value`` it decided on."""
    read = [line.text for sight in request.sights for line in sight.lines]
    parts = [f"I was sent {len(request.sights)} image(s) and could read {len(read)} line(s) of text."]
    # The lines that bear on the request come first: those sharing a word with what it asks about.
    wanted = {t for phrase in [*request.context, *request.choices] for t in tokens(phrase)}
    bearing = [text for text in read if wanted & set(tokens(text))]
    if read:
        parts.append("Among them: " + "; ".join(f'"{text}"' for text in (bearing or read)[:SHOWN_LINES]) + ".")
    if request.question:
        parts.append(f'To find out: "{request.question}"')
    if request.choices:
        parts.append(f"{len(request.choices)} possible replies are offered.")
    if request.context:
        parts.append("I look for: " + ", ".join(request.context) + ".")
    decided = value if isinstance(value, str) else json.dumps(value)
    cut = decided if len(decided) <= SHOWN_CHARS else decided[:SHOWN_CHARS] + "..."
    parts.append(f"So my reply will be {cut}")
    return "\n".join(parts)
