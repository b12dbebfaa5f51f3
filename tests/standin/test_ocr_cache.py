"""The stand-in's readings on disk: the same reading hit or miss, shared across readers and processes."""

from __future__ import annotations

import hashlib
import io
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from PIL import Image, ImageDraw, ImageFont

from videoatlas.errors import BadInputError
from videoatlas_standin import perception
from videoatlas_standin.perception import EncodedImage, Reader, Sight

pytestmark = pytest.mark.unit


def _card(text: str, size: int = 40) -> np.ndarray:
    """A grey card with one line of dark text, as RGB pixels."""
    img = Image.new("RGB", (480, 120), (205, 210, 200))
    ImageDraw.Draw(img).text((30, 35), text, fill=(20, 20, 30), font=ImageFont.load_default(size=size))
    return np.asarray(img)


def _jpeg(rgb: np.ndarray) -> EncodedImage:
    out = io.BytesIO()
    Image.fromarray(rgb).save(out, "JPEG", quality=90)
    data = out.getvalue()
    return EncodedImage(data, hashlib.sha256(data).hexdigest(), rgb.shape[1], rgb.shape[0])


class _NoEngine:
    """Stands in for the recogniser where a test proves it is not run."""

    def text_rec(self, crops: object) -> object:
        raise AssertionError("the recogniser ran although the reading was on disk")


def _entries(root: Path) -> list[Path]:
    return sorted(root.glob("*/*.json"))


@pytest.fixture(scope="module")
def reader() -> Reader:
    return Reader()


def test_a_miss_and_a_hit_give_the_same_reading(
    reader: Reader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rgb = _card("PLATE KX-4471")
    monkeypatch.setenv(perception.OCR_CACHE_ENV, "off")
    uncached = Reader().see(rgb)  # no disk cache at all: the reading as the recogniser makes it
    assert "KX-4471" in uncached.text

    monkeypatch.setenv(perception.OCR_CACHE_ENV, str(tmp_path / "ocr"))
    first = reader.see(rgb)  # a miss: read, then stored
    assert first == uncached
    (entry,) = _entries(tmp_path / "ocr")

    fresh = Reader()
    fresh._engine = _NoEngine()  # a new reader (empty memory) must take the reading from disk
    second = fresh.see(rgb)
    assert second == uncached
    assert isinstance(second, Sight) and second.tiles[0].text == uncached.tiles[0].text
    assert _entries(tmp_path / "ocr") == [entry]


def test_the_key_is_the_decoded_pixels_and_the_settings(
    reader: Reader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(perception.OCR_CACHE_ENV, str(tmp_path / "ocr"))
    rgb = _card("ROOM 512")
    encoded = _jpeg(rgb)
    by_bytes = reader.see(encoded)
    fresh = Reader()
    fresh._engine = _NoEngine()
    assert fresh.see(encoded.pixels()) == by_bytes  # the same decoded pixels, given as an array: a disk hit
    assert len(_entries(tmp_path / "ocr")) == 1

    other = Reader(min_text_px=60)  # other settings read differently: their own entry
    assert "ROOM" not in other.see(rgb).text  # 60 px is taller than these letters
    assert len(_entries(tmp_path / "ocr")) == 2
    source = perception.__file__
    assert perception.pixel_key(rgb, "a", source) != perception.pixel_key(rgb, "b", source)
    assert perception.pixel_key(rgb, "a", source) != perception.pixel_key(rgb[:, :-2], "a", source)


def test_the_key_follows_the_perception_code(tmp_path: Path) -> None:
    rgb = _card("GATE 17")
    before = perception.pixel_key(rgb, "s", perception.__file__)
    changed = tmp_path / "perception.py"
    changed.write_bytes(Path(perception.__file__).read_bytes() + b"\n# one more line\n")
    assert perception.pixel_key(rgb, "s", str(changed)) != before


def test_a_damaged_entry_is_read_again_and_rewritten(
    reader: Reader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(perception.OCR_CACHE_ENV, str(tmp_path / "ocr"))
    rgb = _card("BAY 4")
    good = Reader().see(rgb)
    (entry,) = _entries(tmp_path / "ocr")
    entry.write_text('{"width": 4')  # cut short, as a full disk might leave it
    again = Reader().see(rgb)
    assert again == good
    assert json.loads(entry.read_text())["width"] == rgb.shape[1]


def test_off_keeps_nothing(reader: Reader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(perception.OCR_CACHE_ENV, "off")
    monkeypatch.setenv("VIDEOATLAS_HOME", str(tmp_path / "home"))
    assert "ZONE" in Reader().see(_card("ZONE 9")).text
    assert not (tmp_path / "home").exists()


@pytest.mark.e2e
def test_another_process_takes_the_reading_from_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rgb = _card("TICKET 2290")
    Image.fromarray(rgb).save(tmp_path / "card.png")
    monkeypatch.setenv(perception.OCR_CACHE_ENV, str(tmp_path / "ocr"))
    script = (
        "import sys, numpy as np; from PIL import Image; from videoatlas_standin.perception import Reader; "
        "print(Reader().see(np.asarray(Image.open(sys.argv[1]).convert('RGB'))).text)"
    )
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path / "card.png")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "2290" in done.stdout
    fresh = Reader()
    fresh._engine = _NoEngine()
    assert fresh.see(rgb).text == done.stdout.strip()


def _threads(reader: Reader) -> tuple[int, int]:
    """The intra-op threads of the reader's detection and recognition sessions (0: ONNX Runtime's own default)."""
    engine: Any = reader._engine
    det = engine.text_det.infer.session.get_session_options().intra_op_num_threads
    rec = engine.text_rec.session.session.get_session_options().intra_op_num_threads
    return det, rec


def test_the_readers_threads_follow_the_variable_and_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(perception.OCR_CACHE_ENV, "off")
    cards = [_card("PLATE KX-4471"), _card("GATE 12 NORTH", size=28)]
    monkeypatch.delenv(perception.THREADS_ENV, raising=False)
    default = Reader()
    monkeypatch.setenv(perception.THREADS_ENV, "1")
    single = Reader()
    assert _threads(default) == (0, 0) and _threads(single) == (1, 1)
    assert [single.see(c) for c in cards] == [default.see(c) for c in cards]


@pytest.mark.parametrize("given", ["two", "0", "-1", "1.5"])
def test_a_thread_count_that_is_no_whole_number_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, given: str) -> None:
    monkeypatch.setenv(perception.THREADS_ENV, given)
    with pytest.raises(BadInputError, match=rf"VIDEOATLAS_STANDIN_THREADS must be a whole number .*{re.escape(given)}"):
        Reader()
