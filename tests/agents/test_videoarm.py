"""VideoARM on our environment, with a scripted controller: its tools, its memory, its step limit, its ears.

What each call sent is checked from what the chat model was given (texts, images, schemas); the
audio goes to the stand-in's real speech route (Whisper tiny.en) over HTTP. The bad-input cases
(no sound track, listening turned off, a sound track that cannot be decoded, an endpoint without
the route) each leave one line in the trace, withdraw the tool, and let the run answer.
"""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest
from markupsafe import escape
from PIL import Image

from agent_helpers import ScriptedChat, default_reply, make_context
from db_helpers import sqlite_url
from videoatlas.agents.videoarm.graph import build_graph
from videoatlas.agents.videoarm.schemas import ClipReport, step_schema
from videoatlas.agents.videoarm.settings import SNAP_FRAMES
from videoatlas.errors import BadInputError
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.config import RunConfig
from videoatlas.runtime.speech import forget as forget_speech
from videoatlas.synth.speech import write_speech_video
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer
from videoatlas_standin.version import STANDIN_MODEL

pytestmark = pytest.mark.unit
QUESTION = "Who does the announcer say is the driver today?"
CHOICES = ["Maria", "Peter", "Sofia", "James"]


@pytest.fixture(scope="module")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("arm")
    return {
        "speech": write_speech_video(root / "speech.mp4"),
        "mute": write_speech_video(root / "mute.mp4", with_audio=False),
        "broken": _broken_audio_video(root / "broken.mkv"),
    }


def _broken_audio_video(path: Path) -> Path:
    """A video whose audio stream is declared (MP3) but holds bytes no decoder reads."""
    rng = np.random.default_rng(0)
    with av.open(str(path), "w") as container:
        video = container.add_stream("libx264", rate=4)
        video.width, video.height, video.pix_fmt = 160, 120, "yuv420p"
        audio = container.add_stream("mp3", rate=16000, layout="mono")
        for i in range(40):
            frame = av.VideoFrame.from_ndarray(np.full((120, 160, 3), 90, np.uint8), format="rgb24")
            frame.pts, frame.time_base = i, Fraction(1, 4)
            container.mux(video.encode(frame))
        container.mux(video.encode(None))
        for i in range(100):
            packet = av.Packet(bytes(rng.integers(0, 256, 400, dtype=np.uint8)))
            packet.stream, packet.pts, packet.dts, packet.time_base = audio, i * 1152, i * 1152, Fraction(1, 16000)
            container.mux(packet)
    return path


@pytest.fixture(scope="module")
def standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        yield server


@pytest.fixture(scope="module")
def deaf_standin() -> Iterator[RunningServer]:
    with RunningServer(StandinServer(StandinConfig(speech=False), reader=Reader())) as server:
        yield server


def controller(calls: list[dict[str, Any]]) -> Any:
    """A scripted controller making ``calls`` in turn (each with a reason), then answering; plain tool replies."""
    steps = iter(calls)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "ControllerStep":
            call = next(steps, {"tool": "answer"})
            return {"reason": f"because of step {len(call)}", "call": call}
        if name == "SnapReport":  # names its 8th frame shown, and one it was not shown (dropped)
            return {"caption": "a card with white text on blue", "frames": [_shown(schema)[7], 10_000]}
        if name == "ClipReport":
            return {"answer": "the card reads DEPARTURES", "confidence": 0.75, "frames": []}
        return default_reply(name, text, schema)

    return script


def _shown(schema: dict[str, Any]) -> list[int]:
    """The frame indices a tool report's schema lets it name (those its images showed)."""
    return list(schema["properties"]["frames"]["items"]["enum"])


async def run(
    video: Path, tmp: Path, calls: list[dict[str, Any]], server: RunningServer, max_images: int = 16, **settings: Any
) -> tuple[dict[str, Any], Any]:
    config = RunConfig.of(agent="videoarm", **settings)
    forget_speech()  # each run hears as a new process would (the track is not in memory yet)
    ctx, chat, source = make_context(
        video, tmp, controller(calls), config, speech_url=server.base_url, max_images=max_images
    )
    try:
        out = await build_graph().ainvoke(
            {"question": QUESTION, "choices": CHOICES}, {"recursion_limit": 100}, context=ctx
        )
    finally:
        source.close()
        if ctx.speech is not None:
            await ctx.speech.aclose()
    return out, chat


def step_texts(chat: Any) -> list[tuple[int, str]]:
    return [(i, text) for i, (name, text) in enumerate(chat.seen) if name == "ControllerStep"]


def offered_tools(chat: Any, call: int) -> set[str]:
    schema = chat.formats[call]["json_schema"]["schema"]
    return {d["properties"]["tool"]["const"] for d in schema["$defs"].values() if "tool" in d.get("properties", {})}


CALLS: list[dict[str, Any]] = [
    {"tool": "scene_snapper", "ranges": [], "num_frames": 30},
    {"tool": "scene_snapper", "ranges": [{"start": 0.0, "end": 8.0}, {"start": 30.0, "end": 8.0}], "num_frames": 60},
    {"tool": "clip_analyzer", "start": 24.0, "end": 0.0, "question": "what does the card say?"},
    {"tool": "audio_transcriber", "ranges": [{"start": 8.0, "end": 16.0}]},
]


@pytest.fixture(scope="module")
def scripted(
    videos: dict[str, Path], standin: RunningServer, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Any], Any]:
    return asyncio.run(run(videos["speech"], tmp_path_factory.mktemp("scripted"), CALLS, standin, clip_fps=10.0))


async def test_each_tool_takes_the_papers_frames_and_sizes(scripted: tuple[dict[str, Any], Any]) -> None:
    out, chat = scripted
    names = [name for name, _ in chat.seen]
    tools = ["SnapReport", "SnapReport", "ClipReport"]
    assert names == [s for t in tools for s in ("ControllerStep", t)] + ["ControllerStep"] * 2 + ["FinalDecision"]
    first, second, clip, heard = out["memory"]
    # scene_snapper: 30 frames over the whole video; then 60 over 0-8 s and 8-24 s (the backwards range put
    # forwards and cut at the video's end), shared by length: 20 and 40, as many distinct frames as there are.
    assert len(first.frames) == 30 and first.ranges == [(0.0, 24.0)] and first.mosaics == 5
    assert second.ranges == [(0.0, 8.0), (8.0, 24.0)] and len(second.frames) == 60
    assert sum(f < 32 for f in second.frames) == 20 and sum(f >= 32 for f in second.frames) == 40
    assert [r.detail for r in out["repairs"]] == ["range 30-8 s brought to 8.0-24.0 s (inside the video, forwards)"]
    # 3 x 2 mosaics, short side 256 or the source's 270 if smaller: here 256 (tiles 455 x 256 under a caption strip).
    mosaics = [Image.open(io.BytesIO(j)) for j in chat.images[names.index("SnapReport")]]
    assert {m.size[0] for m in mosaics} == {3 * 455} and all(m.size[1] > 2 * 256 for m in mosaics)
    # clip_analyzer: 24 s at 10 frames a second, capped at 50 frames, on 4 x 3 sheets at the source's 270 px.
    assert len(clip.frames) == 50 and clip.mosaics == 5 and clip.ranges == [(0.0, 24.0)]
    sheets = [Image.open(io.BytesIO(j)) for j in chat.images[names.index("ClipReport")]]
    assert sheets[0].size[0] == 4 * 480 and len(sheets) == 5
    assert clip.confidence == 0.75 and clip.output == "the card reads DEPARTURES"
    # audio_transcriber: what Whisper heard of 8-16 s, in video time.
    assert heard.ranges == [(8.0, 16.0)] and any("Maria" in h.text for h in heard.heard)
    assert all(8.0 <= h.start < h.end <= 16.0 for h in heard.heard)
    # The frame ledger: every distinct frame shown, counted once.
    shown = {*first.frames, *second.frames, *clip.frames}
    assert out["cost"].frames_viewed == len(shown) <= 96


def test_a_report_is_evidence_where_it_says_it_saw_it(scripted: tuple[dict[str, Any], Any]) -> None:
    """A caption that names frames is placed at them; an answer that names none, over the stretch it looked at.

    Before, every caption was placed at the middle of all its tool looked at (a sighting at 04:03 of a
    survey of the whole 10 minutes was evidence at 05:03, from 00:00 to 10:00), so which of two things
    came first could not be read from the evidence.
    """
    out, chat = scripted
    first, _, clip, _ = out["memory"]
    named = first.frames[7]
    assert first.seen == [(named, (named + 0.5) / 4)]  # frame n is on screen from n / 4 s (4 frames a second)
    assert clip.seen == []
    by_step = {e.where["step"]: e for e in out["evidence"]}
    assert (by_step[1].time, by_step[1].start, by_step[1].end) == ((named + 0.5) / 4,) * 3
    assert f"scene_snapper, seen in frame {named} at 00:0" in by_step[1].description
    assert (by_step[3].start, by_step[3].end) == (0.0, 24.0) and "clip_analyzer on 00:00.0-00:24.0" in by_step[
        3
    ].description
    # scene_snapper is asked with the question's choices, so that it can name the frames that bear on them.
    snaps = [text for name, text in chat.seen if name == "SnapReport"]
    assert all(f"{QUESTION}\nIts choices:\nA. Maria\nB. Peter\nC. Sofia\nD. James\n" in text for text in snaps)
    # The controller reads where each report saw it, from the step after it on.
    steps = step_texts(chat)
    assert f"  seen in: frame {named} at " in steps[1][1] and f"frame {named} at" not in steps[0][1]


def test_every_mosaic_tile_shows_its_frame_index_and_time(scripted: tuple[dict[str, Any], Any]) -> None:
    out, chat = scripted
    names = [name for name, _ in chat.seen]
    first = out["memory"][0]
    jpeg = chat.images[names.index("SnapReport")][0]
    sight = Reader().see(np.asarray(Image.open(io.BytesIO(jpeg)).convert("RGB")))
    labelled = sorted((t.cell, round(t.time or -1.0, 1)) for t in sight.tiles if t.cell is not None)
    assert [cell for cell, _ in labelled] == first.frames[:6]  # six frames, each read back by its index
    assert all(abs(t - cell / 4) < 0.06 for cell, t in labelled)  # and its time (frame n starts at n / 4 s)


def test_the_controller_sees_only_its_focus_and_its_prompt_grows_by_memory_entries(
    scripted: tuple[dict[str, Any], Any],
) -> None:
    out, chat = scripted
    names = [name for name, _ in chat.seen]
    steps = step_texts(chat)
    snaps = [i for i, n in enumerate(names) if n == "SnapReport"]
    clip = names.index("ClipReport")
    # Images: none before a focus exists, then always the latest scene_snapper's mosaics, drawn again; the
    # analyzer's sheets (short-term pool) never come back.
    assert chat.images[steps[0][0]] == []
    assert chat.images[steps[1][0]] == chat.images[snaps[0]]
    assert all(chat.images[i] == chat.images[snaps[1]] for i, _ in steps[2:])
    assert not {bytes(j) for j in chat.images[clip]} & {bytes(j) for i, _ in steps for j in chat.images[i]}
    # Text: the same prompt each step but for the step number, the focus line and the memory, which only grows,
    # and the first step's request to say the question's time relation.
    ask = "Also say how the question places its answer in time: "
    assert ask in steps[0][1] and not any(ask in text for _, text in steps[1:])

    def parts(text: str) -> tuple[str, str]:
        head, _, memory = text.partition("Memory, step by step:\n")
        memory, _, tail = memory.partition("\n\nThis is step ")
        head = re.sub(r"Current focus: .*", "", re.sub(re.escape(ask) + ".*", "", head))
        return head + re.sub(r"^\d+", "", tail), memory

    fixed = {parts(text)[0] for _, text in steps}
    memories = [parts(text)[1] for _, text in steps]
    assert len(fixed) == 1 and memories[0].startswith("(empty")
    assert all(memories[k + 1].startswith(memories[k]) for k in range(1, len(memories) - 1))
    assert [m.count("\nStep ") + m.startswith("Step ") for m in memories] == list(range(len(memories)))
    # Every call carried its reason, and the memory kept it.
    reasons = [line for line in memories[-1].split("\n") if line.startswith("  reason: ")]
    assert len(reasons) == len(CALLS) and all("because of step" in line for line in reasons)
    assert [e.reason for e in out["memory"]] == [f"because of step {len(c)}" for c in CALLS]


def test_the_schemas_hold_num_frames_to_its_set_and_confidence_to_0_1() -> None:
    schema = step_schema(("scene_snapper", "clip_analyzer", "answer"), 60.0).model_json_schema()
    snap = schema["$defs"]["SceneSnapperCall"]["properties"]
    assert snap["num_frames"]["enum"] == list(SNAP_FRAMES) and "reason" in schema["required"]
    assert snap["ranges"]["maxItems"] == 4
    confidence = ClipReport.model_json_schema()["properties"]["confidence"]
    assert (confidence["minimum"], confidence["maximum"]) == (0.0, 1.0)


@pytest.mark.parametrize("steps", [3, 10])
async def test_at_the_step_limit_the_answer_is_forced(
    videos: dict[str, Path], standin: RunningServer, tmp_path: Path, steps: int
) -> None:
    counts = [90, 60, 30, 60]  # 150 makes 25 mosaics: not offered on an endpoint of 16 images (the next test)
    calls: list[dict[str, Any]] = [
        {"tool": "scene_snapper", "ranges": [], "num_frames": counts[i % 4]} for i in range(12)
    ]  # a controller that never answers by itself
    out, chat = await run(videos["speech"], tmp_path, calls, standin, steps=steps, snap_px=96)
    names = [name for name, _ in chat.seen]
    # N steps with a tool (the paper's Algorithm 1), then the forced answer, each tool call with its reason.
    assert names == ["ControllerStep", "SnapReport"] * steps + ["FinalDecision"]
    assert len(out["memory"]) == steps and all(e.reason for e in out["memory"])
    # num_frames as asked, each frame once.
    assert [len(e.frames) for e in out["memory"]] == [min(96, counts[i % 4]) for i in range(steps)]
    assert out["stop_reason"] == f"{steps} tool steps done: answer forced"


async def test_only_the_frame_counts_whose_mosaics_the_endpoint_takes_are_offered(
    videos: dict[str, Path], standin: RunningServer, tmp_path: Path
) -> None:
    """On an endpoint of 10 images a prompt, 90 (15 mosaics) and 150 (25) are not offered; 60 makes 10.

    Before, 150 was always offered, and a run whose controller chose it on a video of 150 frames or
    more failed with "25 images in one prompt exceed the server's limit of 16".
    """
    calls: list[dict[str, Any]] = [{"tool": "scene_snapper", "ranges": [], "num_frames": n} for n in (60, 30)]
    out, chat = await run(videos["speech"], tmp_path, calls, standin, max_images=10, snap_px=96)
    steps = step_texts(chat)
    assert len(steps) == 3
    for i, text in steps:
        snap = chat.formats[i]["json_schema"]["schema"]["$defs"]["SceneSnapperCall"]["properties"]
        assert snap["num_frames"]["enum"] == [30, 60]
        assert '"num_frames" frames (30 or 60) spread' in text
    assert [(len(e.frames), e.mosaics) for e in out["memory"]] == [(60, 10), (30, 5)]
    assert [len(images) for images in chat.images] == [0, 10, 10, 5, 5, 5]
    assert not out["repairs"]


async def test_an_endpoint_too_small_for_the_smallest_survey_is_a_clear_error(
    videos: dict[str, Path], standin: RunningServer, tmp_path: Path
) -> None:
    with pytest.raises(
        BadInputError, match=r"smallest survey \(30 frames\) needs 5 images in one prompt and the endpoint takes 4"
    ):
        await run(videos["speech"], tmp_path, [CALLS[0]], standin, max_images=4)


LISTEN = [{"tool": "audio_transcriber", "ranges": []}]


def test_no_audio_is_a_command_line_setting() -> None:
    from videoatlas.agents.registry import settings_of
    from videoatlas.agents.videoarm.settings import VideoArmSettings
    from videoatlas.cli.main import build_parser
    from videoatlas.cli.run_setup import run_config_from

    args = build_parser().parse_args(["ask", "v.mp4", "-q", "?", "--agent", "videoarm", "--no-audio", "true"])
    assert settings_of(run_config_from(args)) == VideoArmSettings(no_audio=True)


@pytest.mark.parametrize(
    ("video", "settings", "why"),
    [("mute", {}, "the video has no sound track"), ("speech", {"no_audio": True}, "listening is turned off")],
)
async def test_without_sound_or_with_listening_off_the_tool_is_not_offered(
    videos: dict[str, Path], standin: RunningServer, tmp_path: Path, video: str, settings: dict[str, Any], why: str
) -> None:
    out, chat = await run(videos[video], tmp_path, [CALLS[0]], standin, **settings)
    steps = step_texts(chat)
    assert all(offered_tools(chat, i) == {"scene_snapper", "clip_analyzer", "answer"} for i, _ in steps)
    assert all(why in text and "- audio_transcriber" not in text for _, text in steps)
    assert out["answer"] and [e.tool for e in out["memory"]] == ["scene_snapper"]


@pytest.mark.parametrize(
    ("video", "server", "said"),
    [("broken", "standin", "cannot be decoded"), ("speech", "deaf_standin", "no transcription route")],
)
async def test_unreadable_sound_or_no_route_withdraws_the_tool_and_the_run_goes_on(
    videos: dict[str, Path], request: pytest.FixtureRequest, tmp_path: Path, video: str, server: str, said: str
) -> None:
    endpoint: RunningServer = request.getfixturevalue(server)
    calls = [*LISTEN, CALLS[0]]
    out, chat = await run(videos[video], tmp_path, calls, endpoint)
    steps = step_texts(chat)
    assert "audio_transcriber" in offered_tools(chat, steps[0][0])
    assert all("audio_transcriber" not in offered_tools(chat, i) for i, _ in steps[1:])
    [withdrawn] = [r for r in out["repairs"] if r.kind == "fallback"]
    assert withdrawn.detail.startswith("speech withdrawn for this run: ") and said in withdrawn.detail
    assert "\n" not in withdrawn.detail
    assert [e.tool for e in out["memory"]][:2] == ["audio_transcriber", "scene_snapper"] and out["answer"]


HEARD = re.compile(r"driver today is Maria", re.I)
"""The fact as it is said (the choices name Maria too: the words around the name are only heard)."""


async def run_script(
    video: Path, tmp: Path, script: Any, server: RunningServer | None, question: str = QUESTION, **settings: Any
) -> tuple[dict[str, Any], Any]:
    """A run of ``script`` as the whole model (controller and tools); ``server`` hears the video (None: no ears)."""
    max_images = settings.pop("max_images", 16)
    forget_speech()
    ctx, chat, source = make_context(
        video, tmp, script, RunConfig.of(agent="videoarm", **settings), max_images=max_images,
        speech_url=server.base_url if server is not None else None,
    )  # fmt: skip
    try:
        out = await build_graph().ainvoke(
            {"question": question, "choices": CHOICES}, {"recursion_limit": 100}, context=ctx
        )
    finally:
        source.close()
        if ctx.speech is not None:
            await ctx.speech.aclose()
    return out, chat


def citing_what_was_heard(calls: list[dict[str, Any]]) -> Any:
    """The controller of :func:`controller`, whose answer picks Maria and cites the memory items that heard it."""
    plain = controller(calls)

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "FinalDecision":
            labels = re.findall(r"^\[([A-Z]+)\][^\n]*" + HEARD.pattern, text, re.M | re.I)
            return {**default_reply(name, text, schema), "answer": CHOICES.index("Maria"), "evidence": labels}
        return plain(name, text, schema)

    return script


async def test_a_controller_that_looked_then_listened_answers_on_what_it_heard(
    videos: dict[str, Path], standin: RunningServer, tmp_path: Path
) -> None:
    """The cards show nothing of the driver; the speech says it. After a survey, listening is still offered;
    what is heard enters the memory, the answer is told it and cites it, and the run ends by answering with
    steps left. (Whether a model listens is its own choice: the stand-in's run of this was its rule.)"""
    script = citing_what_was_heard([CALLS[0], *LISTEN])
    out, chat = await run_script(videos["speech"], tmp_path, script, standin, snap_px=96)
    steps = step_texts(chat)
    assert "audio_transcriber" in offered_tools(chat, steps[1][0])  # after the survey, still offered
    assert [e.tool for e in out["memory"]] == ["scene_snapper", "audio_transcriber"]
    heard = out["memory"][1]
    assert any(HEARD.search(h.text) for h in heard.heard) and all(0 <= h.start < h.end <= 24.5 for h in heard.heard)
    decision = next(text for name, text in chat.seen if name == "FinalDecision")
    assert HEARD.search(decision)
    cited = [e for e in out["evidence"] if e.id in out["cited"]]
    assert cited and all(e.where["tool"] == "audio_transcriber" and HEARD.search(e.description) for e in cited)
    assert out["answer"] == "Maria" and out["stop_reason"] == "the controller answered"


@pytest.mark.parametrize(("max_images", "frames"), [(16, 90), (25, 150)])
async def test_a_survey_is_as_dense_as_the_endpoints_image_limit_allows_and_sent_in_one_prompt(
    counter_video: Path, tmp_path: Path, max_images: int, frames: int
) -> None:
    """The most frames offered is the most whose mosaics (six frames each) one prompt of the endpoint takes: 90 on
    vLLM's default of 16 images, 150 once the endpoint says it takes 25; a controller that takes it gets all of
    them, in one prompt. Before, 150 frames (25 mosaics) could not be sent."""
    offered: list[list[int]] = []
    plain = controller([])

    def densest(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "ControllerStep" and not offered:
            offered.append(schema["$defs"]["SceneSnapperCall"]["properties"]["num_frames"]["enum"])
            call = {"tool": "scene_snapper", "ranges": [], "num_frames": max(offered[0])}
            return {"reason": "count them all", "call": call}
        return plain(name, text, schema)

    question = "How many times is a 7 shown?"
    out, chat = await run_script(counter_video, tmp_path, densest, None, question, max_images=max_images, snap_px=96)
    assert max(offered[0]) == frames
    first = out["memory"][0]
    assert first.tool == "scene_snapper" and len(first.frames) == frames and first.mosaics == frames // 6
    names = [name for name, _ in chat.seen]
    assert len(chat.images[names.index("SnapReport")]) == frames // 6 <= max_images
    assert out["cost"].frames_viewed >= frames


async def test_trace_and_the_run_page_show_each_steps_tool_reason_mosaics_and_transcript(
    videos: dict[str, Path], standin: RunningServer, tmp_path: Path
) -> None:
    """A stored run read back: ``trace`` prints each step with its reason, the run page shows each step's tool,
    its reason (escaped), the transcript heard and the mosaics its call showed (30 frames: five 3 x 2 mosaics)."""
    from videoatlas.ui.report import report_html

    calls = [*LISTEN, CALLS[0]]
    plain = controller(calls)
    reasons = iter(['listen for "relation" <b>first</b>', "then look"])

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        reply = plain(name, text, schema)
        return {**reply, "reason": next(reasons, "answer now")} if name == "ControllerStep" else reply

    forget_speech()
    db = sqlite_url(tmp_path / "runs.db")
    endpoint = EndpointSettings(base_url=standin.base_url, model=STANDIN_MODEL)
    config = RunConfig.of(agent="videoarm", snap_px=96)
    result = await run_question(
        videos["speech"], QUESTION, CHOICES, config, endpoint, chat_model=ScriptedChat(script=script), db_url=db
    )
    trace = await load_trace(result.run_id, db)
    steps = trace["detail"]["steps"]
    assert (
        [s["tool"] for s in steps]
        == [e.tool for e in result.state["memory"]]
        == [
            "audio_transcriber",
            "scene_snapper",
        ]
    )
    shown = trace_lines(trace)
    assert shown[0].startswith(f"run {result.run_id} [finished] (videoarm)")
    assert sum(line.strip().startswith("Step ") for line in shown) == 2, shown
    assert [line.strip() for line in shown if line.strip().startswith("reason: ")] == [
        'reason: listen for "relation" <b>first</b>',
        "reason: then look",
    ]
    page = await report_html(result.run_id, db)
    turns = [t.split("</section>")[0] for t in page.split('<section class="turn box">')[1:]]
    assert len(turns) == 2
    assert "audio_transcriber" in turns[0] and HEARD.search(turns[0]) and "thumb" not in turns[0]
    assert "scene_snapper" in turns[1] and len(steps[1]["images"]) == 5  # 30 frames, six to a 3 x 2 mosaic
    assert turns[1].count('class="zoomable thumb"') == 5
    # The page escapes what it shows (a reason may quote the prompt's "relation" and its values).
    assert all(f"<b>Thought:</b> {escape(s['reason'])}" in t for s, t in zip(steps, turns, strict=True))
    assert "<b>first</b>" not in turns[0]
