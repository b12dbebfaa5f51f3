"""Every agent files the evidence its answer cites where the thing asked about was seen.

The video: 80 s at 10 frames a second, 320 x 180, a keyframe every 2 s; an orange card printed
with the code 4417 is on screen from 39.0 to 42.3 s and nowhere else, and a blue HARBOR banner
from 30.0 to 33.0 s (the anchor of a time relation). Each agent runs on it with a scripted model
that behaves as a VLM seeing the card would: it names the card by the label it is shown (a frame
index, a cell id, a frame id), choosing the labels whose time lies on the card's stretch, as the
prompt or the reply schema gives their times and the video's frame rate places them; and its final
decision cites the evidence listed at such a time. Whatever an agent keeps of where it looked, the
item the answer cites must lie there too: its time on the card's stretch, its own stretch
overlapping it.

Before, the uniform baseline placed a cited cell at its middle (42.5 s, the card gone) while the
cell showed its keyframe at 42.0 s (the card on it); VideoARM placed a report that named the
anchor's frame beside the card's at the anchor (30.2 s), and a report that named no frame after a
call that listed its ranges later one first from the first range's start to the last one's end.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw

from agent_helpers import ScriptedChat, default_reply, listed_cells, step
from videoatlas.agents.eea import discover
from videoatlas.environment.render import load_font
from videoatlas.environment.timefmt import parse_time
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import RunResult, run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.frame_index import FrameIndex
from videoatlas.state.models import Evidence, IndexInfo
from videoatlas.synth import SynthSpec
from videoatlas.synth.encode import write_frames

pytestmark = pytest.mark.unit

DURATION = 80.0
FPS = 10.0
SIZE = (320, 180)
CARD = (39.0, 42.3)
"""The stretch the card is on screen: frames 390 to 422."""
BANNER = (30.0, 33.0)
ORANGE = (240, 150, 30)
QUESTION = "Which code is printed on the orange card?"
AFTER = "Which code is shown right after the blue HARBOR banner?"
CHOICES = ["7144", "4417", "1474"]
CAPTION = "an orange card printed with the code 4417"
AGENTS: dict[str, dict[str, Any]] = {
    "video-rlm": {"k": 4, "workers": 1, "rounds": 1},
    "videoseek": {"turns": 3},
    "videoarm": {"steps": 3, "snap_px": 96, "clip_px": 128},
    "eea": {"top_k": 1, "expansions": 1, "query_update": False, "frame_px": 96},
    "uniform": {"frames": 16, "k": 4},
}
"""Each agent's run kept small: few rounds, steps and frames."""


def _picture(card: bool, banner: bool) -> Image.Image:
    img = Image.new("RGB", SIZE, (38, 40, 46))
    draw = ImageDraw.Draw(img)
    if card:
        draw.rectangle((60, 50, 260, 130), fill=ORANGE)
        draw.text((95, 65), "4417", fill=(0, 0, 0), font=load_font(44))
    if banner:
        draw.rectangle((40, 10, 280, 60), fill=(20, 60, 140))
        draw.text((70, 15), "HARBOR", fill=(250, 250, 250), font=load_font(34))
    return img


def _states() -> Iterator[tuple[float, float, Image.Image]]:
    cuts = [0.0, BANNER[0], BANNER[1], CARD[0], CARD[1], DURATION]
    for a, b in itertools.pairwise(cuts):
        mid = (a + b) / 2
        yield a, b, _picture(CARD[0] <= mid < CARD[1], BANNER[0] <= mid < BANNER[1])


@pytest.fixture(scope="module")
def card_video(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The video, keyframes only every 2 s (no keyframe where the picture changes)."""
    path = tmp_path_factory.mktemp("evidence") / "card.mp4"
    spec = SynthSpec(
        duration=DURATION, width=SIZE[0], height=SIZE[1], fps=FPS, gop_s=2.0, scenecut=False, subtitles=False
    )
    write_frames(path, spec, _states())
    return path


# -- reading times the way a model reads them from the prompt -------------------------------------------------

CLOCK = r"\d+:\d\d(?:\.\d+)?"
"""A clock time as the prompts write it: ``01:02.5``."""


def groups(pattern: str, text: str) -> tuple[str, ...]:
    """What ``pattern`` captures in the prompt's ``text`` (it must be there)."""
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in the prompt:\n{text}"
    return found.groups()


def times_in(line: str) -> list[float]:
    """The moments a line of a prompt names: its clock times and its ``@12.5 s``."""
    found = [parse_time(clock) for clock in re.findall(CLOCK, line)]
    return found + [float(t) for t in re.findall(r"@(\d+(?:\.\d+)?) s", line)]


def on_card(t: float, margin: float = 0.15) -> bool:
    """Whether a frame labelled ``t`` (rounded to 0.1 s in a prompt) shows the card."""
    return CARD[0] + margin <= t <= CARD[1] - margin


def frame_on_card(index: int) -> bool:
    """Whether frame ``index`` (on screen from index / FPS for 1 / FPS) shows the card."""
    return CARD[0] <= index / FPS and (index + 1) / FPS <= CARD[1] + 1e-9


def overlap(a: float, b: float) -> float:
    return max(0.0, min(b, CARD[1]) - max(a, CARD[0]))


def final_decision(text: str, schema: dict[str, Any], answer: int = CHOICES.index("4417")) -> dict[str, Any]:
    """The final decision: the card's code, citing each evidence label whose line names a moment on the card."""
    labels = schema["properties"]["evidence"]["items"].get("enum") or []
    cited = [
        label
        for label in labels
        if any(on_card(t) for line in text.splitlines() if line.startswith(f"[{label}]") for t in times_in(line))
    ]
    reasoning = "the card reads 4417 in the evidence cited"
    return {**default_reply("FinalDecision", text, schema), "answer": answer, "reasoning": reasoning, "evidence": cited}


# -- each agent's model ---------------------------------------------------------------------------------------


def rlm_script(name: str, text: str, schema: dict[str, Any]) -> Any:
    """The probe ranks root cells by how much of the card's stretch they hold; a worker files the cells inside it.

    A cell whose whole stretch lies on the card shows it, whichever of its frames is drawn.
    """
    if name == "GlobalProbe":
        cells = [(i, a, b) for i, a, b, _ in listed_cells(text, DURATION)]
        open_ids = schema["properties"]["cells"]["items"]["enum"]
        ranked = sorted((c for c in cells if c[0] in open_ids), key=lambda c: -overlap(c[1], c[2]))
        return {"cells": [c[0] for c in ranked][: schema["properties"]["cells"]["minItems"]], "reason": "the card"}
    if name == "WorkerStep":
        return worker_step(text)
    if name == "FinalDecision":
        return final_decision(text, schema)
    return default_reply(name, text, schema)


def worker_step(text: str) -> dict[str, Any]:
    """The first open cell whose stretch lies on the card, filed once; then done."""
    inside = [i for i, a, b, marks in listed_cells(text) if CARD[0] <= a and b <= CARD[1] and not marks]
    if inside and "collected by you" not in text:
        items = [{"cell": inside[0], "description": CAPTION, "confidence": 0.9}]
        return step("ADD_TO_SCRATCHPAD", items=items, summary="the card")
    return step("FINISHED")


def seek_script(name: str, text: str, schema: dict[str, Any]) -> Any:
    """A skim around the card, then a focus on it; each report flags the frames whose times lie on the card.

    A skim's and a focus's frames are spread evenly over the stretch the prompt names (a focus's one a
    second over a stretch a whole number of seconds long), and each id's time is read from that.
    """
    if name == "PlannerTurn":
        (turn,) = (int(n) for n in groups(r"This is turn (\d+)", text))
        calls = [
            {"tool": "skim", "query": "the orange card", "start": 36.0, "end": 45.3},
            {"tool": "focus", "query": "the code on the card", "start": 39.5, "end": 42.5},
        ]
        return {"thought": "look at the card", "call": calls[turn - 1] if turn <= len(calls) else {"tool": "answer"}}
    if name in ("SkimReport", "FocusReport"):
        start, end = (parse_time(t) for t in groups(rf"({CLOCK})-({CLOCK}) of the video", text))
        (count,) = (int(n) for n in groups(r"These (\d+) frames", text))
        at = [start + (i + 0.5) * (end - start) / count for i in range(count)]
        relevant = [i for i, t in enumerate(at) if on_card(t)]
        if name == "FocusReport":
            return {"found": True, "description": CAPTION, "relevant": relevant}
        notes = [{"id": i, "description": CAPTION if i in relevant else "a dark screen"} for i in range(count)]
        return {"frames": notes, "relevant": relevant, "summary": "the card, then nothing"}
    if name == "FinalDecision":
        return final_decision(text, schema)
    return default_reply(name, text, schema)


def arm_script(question: str = QUESTION) -> Callable[[str, str, dict[str, Any]], Any]:
    """A survey around the card, a clip of it, then the answer; each report names the frames the card is on.

    A frame's index is its label and its schema's value; the frame rate places it. The question after the
    banner makes the first step say its relation, and the survey name the banner's frame as the anchor's, and
    (as asked: the frames that show what the question asks about) among its frames too, first, in time order.
    """
    relation = question == AFTER

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "ControllerStep":
            (step_no,) = (int(n) for n in groups(r"This is step (\d+)", text))
            calls: list[dict[str, Any]] = [
                {
                    "tool": "scene_snapper",
                    "ranges": [{"start": 28.0 if relation else 36.0, "end": 46.0}],
                    "num_frames": 30,
                },
                {"tool": "clip_analyzer", "start": CARD[0], "end": CARD[1], "question": "what code is on the card?"},
            ]
            reply: dict[str, Any] = {
                "reason": "look at the card",
                "call": calls[step_no - 1] if step_no <= len(calls) else {"tool": "answer"},
            }
            if "relation" in schema["properties"]:
                reply |= (
                    {"relation": "right after", "anchor": "the blue HARBOR banner"}
                    if relation
                    else {"relation": "none"}
                )
            return reply
        if name in ("SnapReport", "ClipReport"):
            shown = schema["properties"]["frames"]["items"]["enum"]
            card = [f for f in shown if frame_on_card(f)]
            banner = [f for f in shown if BANNER[0] <= f / FPS and (f + 1) / FPS <= BANNER[1]]
            reply = {"frames": card[::-1]}  # not in time order: any order a model names them in
            if "anchor" in schema["properties"]:
                reply = {"frames": [*banner[:1], *card], "anchor": banner[:1]}
            if name == "ClipReport":
                return {"answer": "the card reads 4417", "confidence": 0.9, **reply}
            return {"caption": CAPTION, **reply}
        if name == "FinalDecision":
            return final_decision(text, schema)
        return default_reply(name, text, schema)

    return script


def eea_script(name: str, text: str, schema: dict[str, Any]) -> Any:
    """Queries for the card, the stretches scored by how much of the card they hold, then the answer."""
    if name == "SearchQueries":
        return {"search_queries": ["an orange card with a code"]}
    if name == "SegmentRewards":
        spans = {
            f"segment_{i}": (float(a), float(b))
            for i, a, b in re.findall(r"^stretch (\d+): \S+ \((\d+\.\d)-(\d+\.\d) s\)", text, re.M)
        }
        return {key: {"explanation": "its end frames", "score": 90 if overlap(*spans[key]) else 10} for key in spans}
    if name == "Selection":
        return {"thought": "the card is in memory", "step": {"action": "answer"}}
    if name == "FinalDecision":
        return final_decision(text, schema)
    return default_reply(name, text, schema)


def uniform_script(name: str, text: str, schema: dict[str, Any]) -> Any:
    """The sheet's cells in time order over the whole video, each labelled with its start: the one starting on the
    card is cited (its picture shows the card: checked from the sheet's pixels)."""
    assert name == "FinalDecision"
    (duration,) = (parse_time(t) for t in groups(rf"a video of ({CLOCK})", text))
    (frames,) = (int(n) for n in groups(r"from (\d+) frames", text))
    labels = schema["properties"]["evidence"]["items"]["enum"]
    cited = [label for label in labels if on_card(int(label.split("/")[1]) * duration / frames, margin=0.0)]
    return {**final_decision(text, schema), "evidence": cited}


@pytest.fixture
def card_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """EEA's frame index without an embedding endpoint: one frame a second, the query near only the card's frames."""
    times = np.arange(DURATION) + 0.5
    vectors = np.array([[1.0, 0.0] if CARD[0] <= t < CARD[1] else [0.0, 1.0] for t in times], np.float32)

    async def index(ctx: Any, settings: Any) -> tuple[FrameIndex, IndexInfo]:
        info = IndexInfo(model="fake", fps=1.0, frames=len(times), build_s=0.0, embedded=0, reused=True)
        return FrameIndex(times, vectors), info

    async def queries(ctx: Any, settings: Any, texts: Sequence[str]) -> tuple[np.ndarray, int]:
        return np.tile(np.array([1.0, 0.0], np.float32), (len(texts), 1)), 0

    monkeypatch.setattr(discover, "frame_index", index)
    monkeypatch.setattr(discover, "query_vectors", queries)


SCRIPTS: dict[str, Callable[[str, str, dict[str, Any]], Any]] = {
    "video-rlm": rlm_script,
    "videoseek": seek_script,
    "videoarm": arm_script(),
    "eea": eea_script,
    "uniform": uniform_script,
}


async def ask(agent: str, video: Path, script: Any, question: str = QUESTION) -> tuple[RunResult, ScriptedChat]:
    chat = ScriptedChat(script=script)
    config = RunConfig.of(agent=agent, cell_px=64, **AGENTS[agent])
    result = await run_question(
        video, question, CHOICES, config, EndpointSettings(model="scripted"), chat_model=chat, persist=False
    )
    return result, chat


def cited(result: RunResult) -> list[Evidence]:
    return [e for e in result.evidence if e.id in result.cited]


def assert_on_card(items: Sequence[Evidence]) -> None:
    assert items, "the answer cites no evidence"
    for e in items:
        assert CARD[0] <= e.time <= CARD[1], f"{e.id} ({e.place}) placed at {e.time:.2f} s, off the card: {e}"
        assert e.start <= e.end and e.start <= CARD[1] and e.end >= CARD[0], f"{e.id} spans {e.start}-{e.end} s: {e}"
        assert e.frame.time == e.time


@pytest.mark.usefixtures("card_index")
@pytest.mark.parametrize("agent", list(AGENTS))
async def test_the_evidence_an_answer_cites_lies_where_the_model_saw_the_thing(agent: str, card_video: Path) -> None:
    result, chat = await ask(agent, card_video, SCRIPTS[agent])
    assert result.answer == "4417" and result.grounded
    assert_on_card(cited(result))
    if agent == "uniform":  # the cell cited shows the card (its keyframe at 42.0 s), not only starts on it
        (sheet,) = chat.images[-1]
        (item,) = cited(result)
        cell = item.where["cell"]
        assert isinstance(cell, int) and shows_card(sheet, cell, AGENTS["uniform"]["k"])


def shows_card(jpeg: bytes, cell: int, k: int) -> bool:
    """Whether ``cell`` of a ``k x k`` contact sheet shows orange over a tenth of its picture."""
    image = np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")).astype(int)
    side = image.shape[0] // k
    row, col = divmod(cell, k)
    tile = image[row * side : (row + 1) * side, col * side : (col + 1) * side]
    near = (np.abs(tile - np.array(ORANGE)).max(axis=2) < 40).mean()
    return bool(near > 0.1)


async def test_videoarm_places_a_report_at_the_thing_it_saw_not_at_the_anchor_it_also_named(card_video: Path) -> None:
    """A survey asked which frame shows the anchor names the banner's, and (asked also for the frames that show what
    the question asks about) the banner's and the card's: the report is placed on the card, the anchor apart."""
    result, _ = await ask("videoarm", card_video, arm_script(AFTER), AFTER)
    assert result.answer == "4417"
    assert_on_card(cited(result))
    (anchor,) = [e for e in result.evidence if "shows the anchor" in e.description]
    assert BANNER[0] <= anchor.time <= BANNER[1]
    # The time check reads the card after the banner, not at it (before: "cites no evidence besides the anchor").
    check = r"Time check against the anchor at 00:3\d\.\d \(right after\): 00:39\.\d is \d\.\d s after it[;.]"
    assert re.search(check, result.reasoning) and "wrong side" not in result.reasoning


async def test_videoarm_places_a_report_that_names_no_frame_over_the_ranges_it_looked_at_in_time_order(
    card_video: Path,
) -> None:
    """A survey of two ranges listed later one first, whose report names no frame: the item spans both.

    Before, it ran from the first range's start to the last range's end: 36 s to 10 s.
    """

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "ControllerStep" and "This is step 1 " in text:
            ranges = [{"start": 36.0, "end": 46.0}, {"start": 0.0, "end": 10.0}]
            return {"reason": "two places", "call": {"tool": "scene_snapper", "ranges": ranges, "num_frames": 30}}
        if name == "ControllerStep":
            return {"reason": "seen", "call": {"tool": "answer"}}
        if name == "SnapReport":
            return {"caption": CAPTION, "frames": []}
        labels = schema["properties"]["evidence"]["items"]["enum"]
        return {**final_decision(text, schema), "evidence": labels}

    result, _ = await ask("videoarm", card_video, script)
    (item,) = cited(result)
    assert (item.start, item.end) == (0.0, 46.0) and item.start <= item.time <= item.end
