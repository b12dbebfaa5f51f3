"""Writing a synthetic video: the encoder for a spec, frames drawn once per visual state, the ground-truth record."""

from __future__ import annotations

import itertools
import json
import math
import os
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

import av
import numpy as np
import structlog
from PIL import Image

from videoatlas.environment.subtitles import SubtitleLine, write_srt
from videoatlas.environment.timefmt import format_ts
from videoatlas.synth.spec import Event, Scene, Style, SynthSpec, Timeline

log = structlog.get_logger(__name__)

T = TypeVar("T")


def write_into_place(final: Path, write: Callable[[Path], T]) -> T:
    """``write(tmp)`` to a temporary file of this process's own, then rename it to ``final``; its result.

    Several processes can make the same video at once (the tasks of a Slurm array, each finding it
    missing under one shared --root): each writes a file no other one touches and renames it into
    place, so a reader finds the whole file or none, never a half-written one. Made from the same
    spec, every copy holds the same content. A failed write leaves no temporary file.
    """
    tmp = final.with_name(f".{final.stem}.{os.getpid()}-{uuid.uuid4().hex[:8]}.partial{final.suffix}")
    try:
        result = write(tmp)
        tmp.replace(final)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return result


def stretches(tl: Timeline) -> Iterator[tuple[float, float, Scene, Event | None]]:
    """Consecutive stretches with one visual state each, covering the whole video."""
    cuts = {0.0, tl.spec.duration}
    for s in tl.scenes:
        cuts.update((s.start, s.end))
    for e in tl.events:
        cuts.update((e.start, e.end))
    points = sorted(c for c in cuts if 0 <= c <= tl.spec.duration)
    si = 0
    for a, b in itertools.pairwise(points):
        if b <= a:
            continue
        mid = (a + b) / 2
        while tl.scenes[si].end <= mid:
            si += 1
        event = next((e for e in tl.events if e.start <= mid < e.end), None)
        yield a, b, tl.scenes[si], event


def frame_runs(tl: Timeline, texture_of: Callable[[Scene], T]) -> Iterator[tuple[range, Scene, Event | None, T]]:
    """Each stretch of one visual state as the frames it holds, with its scene, its event and the scene's texture.

    Frame ``i`` shows time ``i / fps``; a stretch too short to hold a frame is passed over. A scene's
    texture (``texture_of``) is made once, where the scene starts, and painted afresh on each frame.
    """
    fps, total = tl.spec.fps, frame_count(tl.spec)
    index = 0
    texture: T | None = None
    textured: Scene | None = None
    for a, b, scene, event in stretches(tl):
        first, last = max(index, math.ceil(a * fps - 1e-9)), min(total, math.ceil(b * fps - 1e-9))
        if last <= first:
            continue
        if texture is None or scene is not textured:
            texture, textured = texture_of(scene), scene
        yield range(first, last), scene, event, texture
        index = last


def encoder_options(spec: SynthSpec, fixed_bframes: bool = False) -> tuple[str, dict[str, str]]:
    """The encoder name and options for ``spec``.

    ``fixed_bframes`` turns adaptive B-frame placement off, so that every run of ``spec.bframes``
    frames between references is B-frames even when the encoder would judge them not worth it (the
    counter video changes too much between frames for adaptive placement to choose any).
    """
    gop = max(1, round(spec.gop_s * spec.fps))
    if spec.codec == "vp9":
        return "libvpx-vp9", {
            "deadline": "realtime",
            "cpu-used": "8",
            "crf": str(spec.crf),
            "b": "0",
            "g": str(gop),
            "keyint_min": str(gop),
        }
    if spec.codec == "hevc":
        params = [f"keyint={gop}", f"min-keyint={gop}", f"bframes={spec.bframes}", "log-level=error"]
        params.append(f"open-gop={int(spec.open_gop)}")
        if fixed_bframes:
            params.append("b-adapt=0")
        if not spec.scenecut:
            params.append("scenecut=0")
        return "libx265", {"preset": "ultrafast", "crf": str(spec.crf), "x265-params": ":".join(params)}
    options = {
        "preset": "veryfast" if spec.bframes else "ultrafast",
        "crf": str(spec.crf),
        "g": str(gop),
        "keyint_min": str(gop),
    }
    if not spec.scenecut:
        options["sc_threshold"] = "0"
    params = [f"bframes={spec.bframes}"] if spec.bframes else []
    if spec.bframes and fixed_bframes:
        params.append("b-adapt=0")
    if spec.open_gop:
        params.append("open-gop=1")
    if params:
        options["x264-params"] = ":".join(params)
    return "libx264", options


def open_encoder(path: Path, spec: SynthSpec, fixed_bframes: bool = False) -> tuple[Any, Any]:
    """An output container at ``path`` (format from its suffix) and a video stream encoding ``spec``."""
    mp4 = path.suffix.lower() in (".mp4", ".mov", ".m4v")
    container = av.open(str(path), mode="w", options={"movflags": "+faststart"} if mp4 else {})
    fps_fraction = _fps_fraction(spec.fps)
    codec, options = encoder_options(spec, fixed_bframes)
    stream = container.add_stream(codec, rate=fps_fraction)
    if not isinstance(stream, av.VideoStream):
        raise TypeError(f"{codec} is not a video encoder")
    stream.width, stream.height, stream.pix_fmt = spec.width, spec.height, "yuv420p"
    stream.options = dict[str, object](options)
    stream.codec_context.time_base = 1 / fps_fraction
    return container, stream


def _fps_fraction(fps: float) -> Any:
    from fractions import Fraction

    return Fraction(fps).limit_denominator(1001)


Progress = Callable[[int, int], None]


def write_frames(
    path: Path,
    spec: SynthSpec,
    states: Iterator[tuple[float, float, Image.Image]],
    progress: Progress | None = None,
) -> int:
    """Encode piecewise-constant pictures: each ``(start, end, image)`` holds for its frames."""
    total = frame_count(spec)

    def frames() -> Iterator[av.VideoFrame]:
        index = 0
        for start, end, image in states:
            first = math.ceil(start * spec.fps - 1e-9)
            last = min(total, math.ceil(end * spec.fps - 1e-9))
            if last <= max(first, index):
                continue
            frame = av.VideoFrame.from_ndarray(np.asarray(image), format="rgb24").reformat(format="yuv420p")
            for _ in range(max(first, index), last):
                yield frame
            index = last

    return encode_frames(path, spec, frames(), progress)


def frame_count(spec: SynthSpec) -> int:
    """How many frames a video of this spec has (the last one starts before its end)."""
    return math.floor(spec.duration * spec.fps + 1e-9)


def encode_frames(
    path: Path,
    spec: SynthSpec,
    frames: Iterable[av.VideoFrame],
    progress: Progress | None = None,
) -> int:
    """Encode one yuv420p frame per frame index, in order (for videos whose every frame is different)."""
    container, stream = open_encoder(path, spec)
    total = frame_count(spec)
    index = 0
    try:
        for frame in frames:
            frame.pts = index
            for packet in stream.encode(frame):
                container.mux(packet)
            index += 1
            if progress is not None and (index % 500 == 0 or index == total):
                progress(index, total)
        for packet in stream.encode():
            container.mux(packet)
    finally:
        container.close()
    return index


def question_records(tl: Timeline) -> list[dict[str, Any]]:
    """A timeline's questions as a video's ground truth lists them (each with its answer's text)."""
    return [{**asdict(q), "answer": q.answer} for q in tl.questions]


def ground_truth(
    tl: Timeline,
    schema: int,
    video: Path,
    srt: Path | None,
    frames: int,
    event_duration: float,
) -> dict[str, Any]:
    """The ``name.json`` record of a synthetic video (the same keys for every style)."""
    return {
        "schema": schema,
        "style": tl.spec.style,
        "spec": asdict(tl.spec),
        "video": video.name,
        "subtitles": srt.name if srt else None,
        "duration": tl.spec.duration,
        "frames": frames,
        "event_duration": event_duration,
        "chapters": [asdict(c) for c in tl.chapters],
        "events": [asdict(e) for e in tl.events],
        "questions": question_records(tl),
    }


P = TypeVar("P")


@dataclass(frozen=True, slots=True)
class StyleKit(Generic[P]):
    """What one style of synthetic video brings; :meth:`make` writes its files the way every style does."""

    style: Style
    schema: int
    """The style's drawing version, recorded with each video (one drawn by an older version is made again)."""
    plan: Callable[[SynthSpec], P]
    """The whole video planned from its spec and seed alone: its timeline, questions and what to draw where."""
    timeline: Callable[[P], Timeline]
    write_video: Callable[[Path, SynthSpec, P, Progress | None], int]
    """Encode the planned video into a file; returns its frame count."""
    speech: Callable[[P], list[SubtitleLine]]
    """The lines spoken over the video (its subtitles)."""
    event_length: Callable[[SynthSpec], float]
    """How long the style's events last (recorded with the ground truth)."""

    def make(self, spec: SynthSpec, out_dir: str | Path, name: str, progress: Progress | None) -> dict[str, Any]:
        """Write ``name.mp4``, ``name.srt`` when the spec asks for subtitles, and ``name.json`` into ``out_dir``.

        Each file is written under a temporary name and moved into place, and the record (:func:`ground_truth`)
        last: a reader takes a video as made once its record is there.
        """
        spec = replace(spec, style=self.style)  # so the record says what was drawn, whatever the spec said
        plan = self.plan(spec)
        tl = self.timeline(plan)
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        video = out / f"{name}.mp4"
        frames = write_into_place(video, lambda tmp: self.write_video(tmp, spec, plan, progress))
        srt = None
        if spec.subtitles:
            srt = out / f"{name}.srt"
            write_into_place(srt, lambda tmp: write_srt(tmp, self.speech(plan)))
        truth = ground_truth(tl, self.schema, video, srt, frames, self.event_length(spec))
        text = json.dumps(truth, indent=1)
        write_into_place(out / f"{name}.json", lambda tmp: tmp.write_text(text, encoding="utf-8"))
        duration = format_ts(spec.duration, 0)
        log.info("synthesized", style=spec.style, video=str(video), duration=duration, frames=frames)
        return truth


class _Planned(Protocol):
    @property
    def timeline(self) -> Timeline: ...


D = TypeVar("D", bound=_Planned)


def drawn_style(
    style: Style,
    schema: int,
    plan: Callable[[SynthSpec], D],
    render: Callable[[D], Iterable[av.VideoFrame]],
    speech: Callable[[D], list[SubtitleLine]],
    event_length: Callable[[SynthSpec], float],
) -> StyleKit[D]:
    """The kit of a style whose plan carries its timeline and whose every frame is drawn (``render``)."""
    return StyleKit(
        style,
        schema,
        plan,
        lambda planned: planned.timeline,
        lambda tmp, spec, planned, progress: encode_frames(tmp, spec, render(planned), progress),
        speech,
        event_length,
    )
