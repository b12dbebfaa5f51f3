"""What the stand-in "thinks" before it answers, when it imitates a reasoning model.

A plain account of the policy's reading (:class:`.policy.Reading`): the images, what bears on the question, the
question and choices, the reply decided on. It gives clients reasoning of a realistic shape and length.
"""

from __future__ import annotations

import json
from typing import Any

from videoatlas_standin.policy import Reading

MODES = ("off", "field", "tags")
"""``off``: no reasoning; ``field``: in the reply's reasoning field (vLLM with a reasoning parser);
``tags``: in ``<think>`` tags before the answer (vLLM without a parser)."""
SHOWN_CHARS = 400
"""Characters of the chosen reply that the reasoning quotes at most."""


def reasoning_text(reading: Reading, value: Any) -> str:
    """The stand-in's reasoning about the request it read, ending with the reply ``value`` it decided on."""
    parts = [f"I was sent {reading.images} image(s) and read {len(reading.items)} item(s) of text."]
    if reading.account():
        parts.append(f"What bears on the question: {reading.account()}.")
    if reading.question:
        parts.append(f'The question: "{reading.question}"')
    if reading.choices:
        parts.append("The choices: " + "; ".join(reading.choices) + ".")
    if reading.answer:
        how = "was read" if reading.read else "was not read; the first choice stands"
        parts.append(f"The answer {how}: {reading.answer}.")
    decided = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    cut = decided if len(decided) <= SHOWN_CHARS else decided[:SHOWN_CHARS] + "..."
    parts.append(f"So my reply will be {cut}")
    return "\n".join(parts)
