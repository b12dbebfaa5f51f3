"""VideoARM's reply schemas: the controller's step (a reason and one call), and what each tool reports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from videoatlas.agents.tool_loop import seconds_within, step_model
from videoatlas.agents.videoarm.settings import SNAP_FRAMES
from videoatlas.state.schemas import reply_schema, some_of, text

MAX_RANGES = 4
"""Stretches one scene_snapper or audio_transcriber call may name."""


def _step_examples() -> Iterator[dict[str, Any]]:
    full = ("scene_snapper", "clip_analyzer", "audio_transcriber", "answer")
    # every tool; deaf (no audio_transcriber); answering alone; asked again after an answer held back (no answer)
    for tools in (full, full[:2] + full[3:], ("answer",), full[:3], full[:2]):
        for duration in (24.0, 36_000.0):
            yield {"tools": tools, "duration": duration}
            yield {"tools": tools, "duration": duration, "relation": True}
            yield {"tools": tools, "duration": duration, "window": (duration / 4, duration / 2)}
    yield {"tools": full, "duration": 600.0, "counts": SNAP_FRAMES[:3]}  # an endpoint of 16 images at most


@reply_schema(_step_examples)
def step_schema(
    tools: Sequence[str],
    duration: float,
    relation: bool = False,
    window: tuple[float, float] | None = None,
    counts: Sequence[int] = SNAP_FRAMES,
) -> type[BaseModel]:
    """A controller step: ``reason`` (why this call), then ``call``, one variant per tool offered.

    Times are seconds within the video; scene_snapper's ``num_frames`` is one of ``counts`` (those of
    :data:`SNAP_FRAMES` whose mosaics the endpoint takes in one prompt: :func:`.render.snap_counts`);
    an empty ``ranges`` means the whole video. ``relation``: the step also says the question's time
    relation (the first step); ``window``: times are bounded by it instead (the window beside an anchor
    just seen).
    """
    seconds = seconds_within(duration, window)
    stretch = create_model("Range", start=(seconds, ...), end=(seconds, ...))
    ranges = Annotated[list[stretch], Field(json_schema_extra={"maxItems": MAX_RANGES})]  # type: ignore[valid-type]
    frames: Any = Literal[tuple(counts)]  # an enum of the allowed counts
    variants: list[type[BaseModel]] = []
    for tool in tools:
        fields: dict[str, Any] = {"tool": (Literal[tool], ...)}
        if tool == "scene_snapper":
            fields |= {"ranges": (ranges, ...), "num_frames": (frames, ...)}
        elif tool == "clip_analyzer":
            fields |= {"start": (seconds, ...), "end": (seconds, ...), "question": (text(300), ...)}
        elif tool == "audio_transcriber":
            fields |= {"ranges": (ranges, ...)}
        name = "".join(part.capitalize() for part in tool.split("_"))
        variants.append(create_model(f"{name}Call", **fields))
    return step_model("ControllerStep", "reason", variants, relation)


class SnapReport(BaseModel):
    """scene_snapper's caption of the frames in its mosaics (sent as :func:`report_schema` builds it)."""

    caption: text(600)  # type: ignore[valid-type]


class ClipReport(BaseModel):
    """clip_analyzer's answer to its sub-question, and how sure it is (sent as :func:`report_schema` builds it)."""

    answer: text(600)  # type: ignore[valid-type]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]


NAMED_MAX = 8
"""Frames one tool report may name as showing what the question asks about."""


@reply_schema(
    lambda: (
        {"tool": tool, "frames": frames, "anchor": anchor}
        for tool in ("snap", "clip")
        for frames in ([0], list(range(50)))
        for anchor in (False, True)
    )
)
def report_schema(tool: str, frames: Sequence[int], anchor: bool = False) -> type[BaseModel]:
    """A tool's report (``snap``: scene_snapper's, ``clip``: clip_analyzer's) with the frames it rests on.

    ``frames``: 0 to :data:`NAMED_MAX` of the frame indices shown, those that show what the question
    asks about (where in the video the report was seen); ``anchor`` (while the time relation's anchor is
    sought): 0 or 1 of them, the one showing the anchor.
    """
    base = SnapReport if tool == "snap" else ClipReport
    fields: dict[str, Any] = {"frames": (some_of(frames, 0, NAMED_MAX), ...)}
    if anchor:
        fields["anchor"] = (some_of(frames, 0, 1), ...)
    model: type[BaseModel] = create_model(base.__name__, __base__=base, **fields)
    return model
