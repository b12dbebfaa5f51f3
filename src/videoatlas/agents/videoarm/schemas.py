"""VideoARM's reply schemas: the controller's step (a reason and one call), and what each tool reports."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Annotated, Any, Literal, Union

from pydantic import BaseModel, Field, JsonValue, create_model

from videoatlas.agents.videoarm.settings import SNAP_FRAMES
from videoatlas.state.schemas import reply_model, reply_schema, text

MAX_RANGES = 4
"""Stretches one scene_snapper or audio_transcriber call may name."""


def _step_examples() -> Iterator[dict[str, Any]]:
    full = ("scene_snapper", "clip_analyzer", "audio_transcriber", "answer")
    for tools in (full, full[:2] + full[3:], ("answer",)):
        for duration in (24.0, 36_000.0):
            yield {"tools": tools, "duration": duration}


@reply_schema(_step_examples)
def step_schema(tools: Sequence[str], duration: float) -> type[BaseModel]:
    """A controller step: ``reason`` (why this call), then ``call``, one variant per tool offered.

    Times are seconds within the video; scene_snapper's ``num_frames`` is one of :data:`SNAP_FRAMES`;
    an empty ``ranges`` means the whole video.
    """
    bound: dict[str, JsonValue] = {"minimum": 0.0, "maximum": round(duration, 3)}
    seconds = Annotated[float, Field(json_schema_extra=bound)]
    stretch = create_model("Range", start=(seconds, ...), end=(seconds, ...))
    ranges = Annotated[list[stretch], Field(json_schema_extra={"maxItems": MAX_RANGES})]  # type: ignore[valid-type]
    frames: Any = Literal[SNAP_FRAMES]  # an enum of the allowed counts
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
    union = Union[tuple(variants)] if len(variants) > 1 else variants[0]  # noqa: UP007 - built at run time
    call: Any = Annotated[union, Field(discriminator="tool")] if len(variants) > 1 else union
    model: type[BaseModel] = create_model("ControllerStep", reason=(text(1200), ...), call=(call, ...))
    return model


@reply_model
class SnapReport(BaseModel):
    """scene_snapper's caption of the frames in its mosaics."""

    caption: text(600)  # type: ignore[valid-type]


@reply_model
class ClipReport(BaseModel):
    """clip_analyzer's answer to its sub-question, and how sure it is."""

    answer: text(600)  # type: ignore[valid-type]
    confidence: Annotated[float, Field(ge=0.0, le=1.0)]
