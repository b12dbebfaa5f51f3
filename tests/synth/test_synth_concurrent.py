"""Several processes making the same synthetic video at once (the array tasks of one eval on a fresh --root)."""

from __future__ import annotations

import multiprocessing
import multiprocessing.synchronize
from pathlib import Path

import pytest

from videoatlas.environment.subtitles import load_subtitles
from videoatlas.environment.video import probe
from videoatlas.evals.datasets.synthetic import ensure_video
from videoatlas.synth import Style

pytestmark = [pytest.mark.e2e]


def _make(root: str, style: Style, start: multiprocessing.synchronize.Event) -> None:
    start.wait(30)
    _folder, truth = ensure_video(Path(root), 60.0, 3, style)  # an error exits the process with 1
    assert truth["questions"]


@pytest.mark.parametrize("style", ["chapters", "broadcast"])
def test_processes_making_one_video_at_once_all_get_it_whole(tmp_path: Path, style: Style) -> None:
    ctx = multiprocessing.get_context("fork")
    start = ctx.Event()
    makers = [ctx.Process(target=_make, args=(str(tmp_path), style, start)) for _ in range(3)]
    for maker in makers:
        maker.start()
    start.set()
    for maker in makers:
        maker.join(120)
    assert [m.exitcode for m in makers] == [0, 0, 0]
    (folder,) = tmp_path.iterdir()
    assert sorted(p.name for p in folder.iterdir()) == ["video.json", "video.mp4", "video.srt"]  # no partial files
    info = probe(folder / "video.mp4")
    assert info.duration == pytest.approx(60.0, abs=0.5)
    assert load_subtitles(folder / "video.srt")
