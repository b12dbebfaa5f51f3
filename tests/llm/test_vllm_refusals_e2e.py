"""A request the server refuses (HTTP 4xx) ends the run at that node in one clear line; fixing the setting resumes it.

The stand-in is started the way a vLLM server with too short a context (``--max-model-len``) would
be: the text-only first call passes, the first call with a grid is refused with vLLM's own error.
The run fails there, nothing is retried, nothing recorded is lost, and once a server with a longer
context is given, ``resume`` finishes the question from the checkpoint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from db_helpers import rows, sqlite_url
from videoatlas.errors import EndpointError
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import resume_run, run_question
from videoatlas.runtime.context import RunConfig
from videoatlas_standin.perception import Reader
from videoatlas_standin.server import RunningServer, StandinConfig, StandinServer

pytestmark = [pytest.mark.e2e, pytest.mark.slow]


async def test_a_refused_request_fails_the_run_at_its_node_and_resumes_after_the_fix(
    synth_video: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    video, truth = synth_video
    q = next(q for q in truth["questions"] if q["kind"] == "needle_in_chapter")
    db = sqlite_url(tmp_path / "runs.db")
    config = RunConfig.of(cell_px=160, workers=2, rounds=2, dfs_steps=3, traversal="dfs")
    short = StandinConfig(max_model_len=1500)  # a 1280 px grid alone is 2,116 tokens at 28 px patches
    with RunningServer(StandinServer(short, reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="", max_retries=3, backoff_s=0.01)
        with pytest.raises(EndpointError) as caught:
            await run_question(video, q["question"], q["choices"], config, endpoint, db_url=db, run_id="short-ctx")
        refused = server.standin.stats.as_dict()
    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith("node global_probe: HTTP 400, the VLM endpoint refused the prompt's length ")
    assert "(the server's --max-model-len): This model's maximum context length is 1500 tokens" in message
    assert refused["errors"] == {"refused_input_tokens": 1}  # a 400 is not retried
    assert rows(db, "SELECT status FROM va_runs WHERE id = 'short-ctx'")[0][0] == "failed"
    calls_before = rows(db, "SELECT COUNT(*) FROM va_model_calls WHERE run_id = 'short-ctx'")[0][0]
    assert calls_before >= 2  # the text-only calls before the refusal, and the refused one

    with RunningServer(StandinServer(StandinConfig(), reader=Reader())) as server:
        endpoint = EndpointSettings(base_url=server.base_url, model="", max_retries=3, backoff_s=0.01)
        result = await resume_run("short-ctx", db, endpoint=endpoint)
    assert result.answer in q["choices"] and result.run_id == "short-ctx", result.stop_reason
    assert rows(db, "SELECT status FROM va_runs WHERE id = 'short-ctx'")[0][0] == "finished"
    assert rows(db, "SELECT COUNT(*) FROM va_model_calls WHERE run_id = 'short-ctx'")[0][0] > calls_before
