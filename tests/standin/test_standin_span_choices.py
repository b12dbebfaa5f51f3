"""Another stretch of the video before answering without evidence: a reply schema's choice of actions, over real HTTP.

A plain ``openai`` client asks for a reply JSON schema whose ``step`` is one of several variants, each
tagged by a constant (``peek`` with ``from_s``/``to_s``, ``skim`` with ``clips: [[a, b]]``, ``hear``,
``reply``). When the conversation reports that a look at 0-60 s of a 600 s video found nothing that
bears on the question and steps remain, the stand-in picks the variant that looks at a stretch no look
covered, as wide as the last look; another sense comes first; covered or out of steps, it answers.
A question that needs all of the video seen (how many times, which comes first) is not settled by one
sighting: after a look that saw the thing once, the next look goes on to the stretch nobody covered (v23).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest

from picture_helpers import ask
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.spans import SpanField, looks_written, placed, span_field

pytestmark = pytest.mark.e2e

TIME = {"type": "number", "minimum": 0, "maximum": 600}
PEEK = {
    "type": "object",
    "properties": {"act": {"const": "peek"}, "from_s": TIME, "to_s": TIME},
    "required": ["act", "from_s", "to_s"],
}
CLIPS = {"type": "array", "items": {"type": "array", "items": TIME, "minItems": 2, "maxItems": 2}}
SKIM = {"type": "object", "properties": {"act": {"const": "skim"}, "clips": CLIPS}, "required": ["act", "clips"]}
HEAR = {
    "type": "object",
    "properties": {"act": {"const": "hear"}, "clips": CLIPS},
    "required": ["act", "clips"],
}
REPLY = {
    "type": "object",
    "properties": {"act": {"const": "reply"}, "text": {"type": "string"}},
    "required": ["act", "text"],
}
QUESTION = "What is the code number painted on the red van?"
NOTHING = "Trees, a bus stop and an empty street. Nothing relevant."
ACTIONS = "Actions:\n- peek: view the frames from one time to another\n- skim: view a few clips\n"
ACTIONS += "- reply: finish with the final answer"


def schema(*variants: dict[str, Any]) -> dict[str, Any]:
    """A reply schema whose ``step`` is one of ``variants``."""
    return {"type": "object", "properties": {"step": {"anyOf": list(variants)}}, "required": ["step"]}


@pytest.fixture(scope="module")
def client() -> Iterator[openai.OpenAI]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield openai.OpenAI(base_url=server.base_url, api_key="none", max_retries=0)


def step(
    client: openai.OpenAI,
    system: str,
    looks: list[tuple[str, str]],
    *variants: dict[str, Any],
    question: str = QUESTION,
) -> Any:
    """The stand-in's next step after ``looks`` (what it chose, as JSON; what the look reported), checked."""
    messages: list[Any] = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    for chosen, found in looks:
        messages += [{"role": "assistant", "content": chosen}, {"role": "user", "content": found}]
    wanted = schema(*variants)
    fmt = {"type": "json_schema", "json_schema": {"name": "step", "schema": wanted}}
    reply = ask(client, messages=messages, response_format=fmt)
    value = json.loads(reply.choices[0].message.content or "")
    jsonschema.validate(value, wanted)
    return value["step"]


PEEKED = [('{"step": {"act": "peek", "from_s": 0, "to_s": 60}}', f"Frames 0-60 s: {NOTHING}")]


def test_a_look_that_found_nothing_is_followed_by_a_look_elsewhere(client: openai.OpenAI) -> None:
    got = step(client, f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}", PEEKED, REPLY, PEEK)
    assert got == {"act": "peek", "from_s": 60, "to_s": 120}  # the next minute: as wide as the last look


def test_a_look_is_widened_so_that_the_steps_left_cover_what_is_left(client: openai.OpenAI) -> None:
    """540 s not looked at and 4 steps left: each look takes 135 s, not the last look's 60 s."""
    got = step(client, f"The video is 600 s long. You have 4 steps left.\n{ACTIONS}", PEEKED, REPLY, PEEK)
    assert got == {"act": "peek", "from_s": 60, "to_s": 195}


def test_an_array_of_ranges_takes_the_stretch(client: openai.OpenAI) -> None:
    skimmed = [('{"step": {"act": "skim", "clips": [[0, 60]]}}', f"Clips 0-60 s: {NOTHING}")]
    got = step(client, f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}", skimmed, REPLY, SKIM)
    assert got == {"act": "skim", "clips": [[60, 120]]}


def test_the_schema_bound_alone_says_how_long_the_video_is(client: openai.OpenAI) -> None:
    got = step(client, f"You have 20 steps left.\n{ACTIONS}", PEEKED, REPLY, PEEK)
    assert got == {"act": "peek", "from_s": 60, "to_s": 120}


def test_ranges_the_text_writes_for_another_reason_are_not_looks(client: openai.OpenAI) -> None:
    system = f"The video is 600 s long. You have 20 steps left.\nSubtitles: 01:00-10:00 (music only)\n{ACTIONS}"
    got = step(client, system, PEEKED, REPLY, PEEK)
    assert got == {"act": "peek", "from_s": 60, "to_s": 120}


def test_a_look_reported_in_words_counts(client: openai.OpenAI) -> None:
    said = [("I peek at 0-300 s.", f"Frames 0-300 s: {NOTHING}")]
    got = step(client, f"The video is 600 s long. You have 4 steps left.\n{ACTIONS}", said, REPLY, PEEK)
    assert got == {"act": "peek", "from_s": 300, "to_s": 600}


def test_a_video_looked_at_whole_is_answered(client: openai.OpenAI) -> None:
    looks = [*PEEKED, ('{"step": {"act": "peek", "from_s": 60, "to_s": 600}}', f"Frames 60-600 s: {NOTHING}")]
    got = step(client, f"The video is 600 s long. You have 3 steps left.\n{ACTIONS}", looks, PEEK, REPLY)
    assert got["act"] == "reply"


def test_no_step_left_means_answering(client: openai.OpenAI) -> None:
    got = step(client, f"The video is 600 s long. This is step 2 of 2.\n{ACTIONS}", PEEKED, PEEK, REPLY)
    assert got["act"] == "reply"


def test_a_look_that_found_what_was_asked_is_answered(client: openai.OpenAI) -> None:
    found = [(PEEKED[0][0], "Frames 0-60 s: at 00:42 the red van shows the code 7731 on its side.")]
    got = step(client, f"The video is 600 s long. You have 4 steps left.\n{ACTIONS}", found, PEEK, REPLY)
    assert got["act"] == "reply"


def test_another_sense_comes_before_another_stretch(client: openai.OpenAI) -> None:
    told = "- peek: glance at the frames from one time to another\n- hear: transcribe the speech of a few clips\n"
    system = f"The video is 600 s long. You have 4 steps left.\n{told}- reply: finish with the final answer"
    got = step(client, system, PEEKED, PEEK, HEAR, REPLY)
    assert got["act"] == "hear"


COUNT = "How many times does the blue kite cross the screen?"
ORDER = "Which comes first, the blue kite or the red balloon?"
SEEN_ONCE = "Frames 0-60 s: at 00:21 the blue kite crosses from left to right; a red tail streams behind it."
"""A look that saw the kite once: it settles a detail of the kite, not how often or in which order (v23)."""


@pytest.mark.parametrize("question", [COUNT, ORDER])
def test_one_sighting_does_not_settle_a_question_about_the_whole_video(client: openai.OpenAI, question: str) -> None:
    system = f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}"
    got = step(client, system, [(PEEKED[0][0], SEEN_ONCE)], REPLY, PEEK, question=question)
    assert got == {"act": "peek", "from_s": 60, "to_s": 120}  # the next minute, as wide as the last look


def test_after_a_sighting_the_steps_left_set_how_wide_the_next_look_is(client: openai.OpenAI) -> None:
    """540 s not looked at and 3 steps left: the next look takes 180 s."""
    system = f"The video is 600 s long. You have 3 steps left.\n{ACTIONS}"
    got = step(client, system, [(PEEKED[0][0], SEEN_ONCE)], REPLY, PEEK, question=COUNT)
    assert got == {"act": "peek", "from_s": 60, "to_s": 240}


def test_a_detail_the_look_found_is_answered(client: openai.OpenAI) -> None:
    system = f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}"
    got = step(client, system, [(PEEKED[0][0], SEEN_ONCE)], REPLY, PEEK, question="What colour is the kite's tail?")
    assert got["act"] == "reply"


def test_a_count_with_no_step_left_is_answered(client: openai.OpenAI) -> None:
    system = f"The video is 600 s long. This is step 2 of 2.\n{ACTIONS}"
    got = step(client, system, [(PEEKED[0][0], SEEN_ONCE)], REPLY, PEEK, question=COUNT)
    assert got["act"] == "reply"


def test_a_count_over_a_video_looked_at_whole_is_answered(client: openai.OpenAI) -> None:
    whole = [('{"step": {"act": "peek", "from_s": 0, "to_s": 600}}', "Frames 0-600 s: the blue kite at 00:21, 07:40.")]
    system = f"The video is 600 s long. You have 20 steps left.\n{ACTIONS}"
    assert step(client, system, whole, PEEK, REPLY, question=COUNT)["act"] == "reply"


@pytest.mark.unit
def test_how_an_object_takes_a_stretch() -> None:
    def same(node: dict[str, Any]) -> dict[str, Any]:
        return node

    assert span_field(PEEK, same) == SpanField(None, ("from_s", "to_s"), 600.0, integer=False)
    assert span_field(SKIM, same) == SpanField("clips", None, 600.0, integer=False)
    second = {"type": "integer", "maximum": 90}
    ranged = {"properties": {"ranges": {"type": "array", "items": {"$ref": "#/$defs/Range"}}}}
    defs = {"Range": {"type": "object", "properties": {"start": second, "end": second}}}
    field = span_field(ranged, lambda n: defs[n["$ref"].split("/")[-1]] if "$ref" in n else n)
    assert field == SpanField("ranges", ("start", "end"), 90.0, integer=True)
    assert placed({"ranges": []}, field, (30.4, 60.6)) == {"ranges": [{"start": 30, "end": 61}]}
    pair = {"type": "array", "prefixItems": [TIME, TIME], "minItems": 2, "maxItems": 2}
    assert span_field({"properties": {"segments": {"type": "array", "items": pair}}}, same) == SpanField(
        "segments", None, 600.0, integer=False
    )
    peeks = '{"act": "peek", "to_s": 60, "from_s": 0} then {"act":"peek","from_s":60.5,"to_s":90}'
    assert looks_written(peeks, span_field(PEEK, same) or SpanField(None, None, None, False), []) == [
        (0, 60),
        (60.5, 90),
    ]
    skims = 'Turn 1: skim 00:10-00:20 found nothing\n- skim: 0-600 s at a glance\n{"clips": [[30, 40], [50, 55]]}'
    clips = span_field(SKIM, same) or SpanField(None, None, None, False)
    assert looks_written(skims, clips, ["skim"]) == [(10, 20), (30, 40), (50, 55)]  # not where skim is offered
    counts = {"properties": {"scores": {"type": "array", "items": {"type": "array", "items": TIME}}}}
    assert span_field(counts, same) is None  # pairs of numbers that nothing calls stretches
