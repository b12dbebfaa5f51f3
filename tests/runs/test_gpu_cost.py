"""What a question costs a GPU, on a scripted stream whose prompt, cached and completion tokens are known.

The scripted model reports each call's usage as a server would (prompt, completion, and the prompt tokens
its prefix cache served); the images the agent sent are read back from the calls, so the image tokens
expected are computed from their sizes. The figures are checked where users read them: the run's cost
and ``ask --json``, the printed result, ``trace``, the eval's result rows, ``eval report`` and
``eval compare``.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from agent_helpers import ScriptedChat, default_reply
from db_helpers import sqlite_url
from videoatlas.cli.run_view import print_result
from videoatlas.evals.compare import compare, render_comparison
from videoatlas.evals.items import EvalItem
from videoatlas.evals.report import EvalData, render_markdown, report, summarize
from videoatlas.evals.results import result_row
from videoatlas.inspect import load_trace, trace_lines
from videoatlas.llm.images import image_tokens, merged_patch_px
from videoatlas.llm.settings import EndpointSettings
from videoatlas.runs import run_question
from videoatlas.runtime.context import RunConfig

pytestmark = pytest.mark.e2e

FIXTURES = Path(__file__).parents[1] / "fixtures" / "e9ceea9"
QUESTION, CHOICES = "What number does the counter show first?", ["zero", "one"]
ENDPOINT = EndpointSettings(model="scripted-vlm", base_url="http://vlm.example:9000/v1")


def _usage() -> Any:
    """Call n (from 0) reports 1,000 + 100 n prompt tokens, 20 + n completion, 300 n served by the prefix cache."""
    calls = [0]

    def usage(messages: Any, content: str) -> tuple[int, int, int]:
        n = calls[0]
        calls[0] += 1
        return 1000 + 100 * n, 20 + n, 300 * n

    return usage


def _sizes(chat: ScriptedChat) -> list[tuple[int, int]]:
    sizes = []
    for call in chat.images:
        for jpeg in call:
            with Image.open(io.BytesIO(jpeg)) as img:
                sizes.append(img.size)
    return sizes


def test_the_image_token_count_follows_the_models_patch_size() -> None:
    assert merged_patch_px("Qwen/Qwen2.5-VL-7B-Instruct") == 28 and merged_patch_px("scripted-vlm") == 28
    assert merged_patch_px("Qwen/Qwen3-VL-8B-Instruct") == 32 and merged_patch_px("Qwen3.5-35B-A3B") == 32
    # Each side to the nearest whole patch: 2560 / 28 = 91.4 -> 91; 2560 / 32 = 80.
    assert image_tokens(2560, 2560) == 91 * 91 and image_tokens(2560, 2560, 32) == 80 * 80
    assert image_tokens(70, 56) == 2 * 2  # 70 / 28 = 2.5: halves round to even, as the processor's round()
    # Below the fewest pixels (4 tokens of 28 px): both sides scaled by sqrt(3136 / (29 * 28)) = 1.965, rounded up:
    # 28 -> 2 patches, 29 -> 3 patches.
    assert image_tokens(29, 28) == 2 * 3
    # Above the most (16,384 tokens): 4000 px sides are scaled by sqrt(4000**2 / 12845056) = 1.116 and rounded
    # down to 128 patches; at 32 px, by sqrt(4000**2 / 16777216) = 0.977, to 125.
    assert image_tokens(4000, 4000) == 128 * 128 and image_tokens(4000, 4000, 32) == 125 * 125
    assert image_tokens(100, 100, 32) == 8 * 8  # Qwen3-VL's fewest: 64 tokens


def test_the_products_image_token_count_is_the_stand_ins_which_vllm_checked() -> None:
    """The stand-in's rule equals vLLM's at every size (``make conformance``, ``prefix_cache.py``); the product's
    estimate is the same rule, so the cost report splits a real server's prompt tokens as the server counted them."""
    from videoatlas_standin.tokens import image_token_count

    sizes = [(w, h) for w in range(1, 4100, 37) for h in range(1, 4100, 41)]
    for patch in (28, 32):
        assert [image_tokens(w, h, patch) for w, h in sizes] == [image_token_count(w, h, patch) for w, h in sizes]


async def test_a_runs_gpu_cost_is_the_streams_own_figures_where_users_read_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = sqlite_url(tmp_path / "runs.db")
    chat = ScriptedChat(script=default_reply, usage=_usage())
    config = RunConfig.of(cell_px=64, k=4, workers=2, rounds=1)
    result = await run_question(
        FIXTURES / "counter.mp4", QUESTION, CHOICES, config, ENDPOINT, chat_model=chat, db_url=db, run_id="gpu"
    )
    n = len(chat.seen)
    assert n >= 4  # search task, traversal, probe, workers, decision
    prompt = sum(1000 + 100 * i for i in range(n))
    cached = sum(300 * i for i in range(n))
    completion = sum(20 + i for i in range(n))
    images = _sizes(chat)
    image = sum(round(w / 28) * round(h / 28) for w, h in images)  # within the processor's pixel bounds
    assert image > 0
    c = result.cost
    assert (c.prompt_tokens, c.cached_tokens, c.completion_tokens) == (prompt, cached, completion)
    assert (c.image_tokens, c.text_tokens, c.uncached_tokens, c.images) == (
        image, prompt - image, prompt - cached, len(images)
    )  # fmt: skip
    shown = result.as_dict()["cost"]  # ask --json
    assert (shown["image_tokens"], shown["text_tokens"], shown["uncached_tokens"]) == (
        image, prompt - image, prompt - cached
    )  # fmt: skip
    assert shown["cache_hit_rate"] == round(cached / prompt, 4)

    expected = (
        f"{prompt:,} prompt tokens ({image:,} image, {prompt - image:,} text); {cached:,} from the prefix cache "
        f"({cached / prompt:.0%}), {prompt - cached:,} prefilled; {completion:,} completion (0 reasoning); "
        f"{len(images):,} images"
    )
    capsys.readouterr()
    print_result(result)
    assert f"prefill: {expected}" in capsys.readouterr().out.splitlines()
    trace = await load_trace("gpu", db)
    assert f"  prefill: {expected}" in trace_lines(trace)

    # The eval's row, report and comparison, over this run and a second row with other figures.
    item = EvalItem(
        "synthetic", "q1", "v1", str(FIXTURES / "counter.mp4"), QUESTION, CHOICES, 1, ["counting"], {}, 30.0
    )
    stamp = {"agent": "video-rlm", "agent_code": "x", "prompt_set": "default", "prompt_sha": "s", "model": "m"}
    row = result_row(item, "k1", stamp, result, 30.0, "run")
    assert (row["prompt_tokens"], row["cached_tokens"], row["image_tokens"], row["completion_tokens"]) == (
        prompt, cached, image, completion
    )  # fmt: skip
    other = {**row, "item": "q2", "key": "k2", "prompt_tokens": 4000, "cached_tokens": 1000, "image_tokens": 3000}
    summary = summarize([row, other])
    assert summary["mean_prompt_tokens"] == (prompt + 4000) / 2
    assert summary["mean_image_tokens"] == (image + 3000) / 2
    assert summary["mean_text_tokens"] == (prompt - image + 1000) / 2
    assert summary["mean_uncached_tokens"] == (prompt - cached + 3000) / 2
    assert summary["mean_completion_tokens"] == completion and summary["mean_images"] == len(images)
    folder = tmp_path / "ev"
    meta = {"dataset": "synthetic", "agent": "video-rlm", "prompt_set": "default", "prompt_sha": "s", "model": "m"}
    data = EvalData(folder, [meta], [row, other], pending=0)
    markdown = render_markdown(report(data))
    assert (
        f"| all | {(prompt + 4000) / 2:,.0f} | {(image + 3000) / 2:,.0f} | {(prompt - image + 1000) / 2:,.0f} | "
        f"{(cached + 1000) / 2:,.0f} ({(cached + 1000) / (prompt + 4000):.1%}) | {(prompt - cached + 3000) / 2:,.0f} |"
    ) in markdown
    # A row from before image tokens were counted reports no split, not a zero.
    old = {k: v for k, v in other.items() if k not in ("image_tokens", "completion_tokens", "images")}
    assert summarize([old])["mean_image_tokens"] is None and summarize([old])["mean_text_tokens"] is None
    cheaper = EvalData(folder, [meta], [{**row, "cached_tokens": 0}, {**other, "cached_tokens": 0}], pending=0)
    text = render_comparison(compare(data, cheaper, resamples=10))
    assert f"| A | {(prompt + 4000) / 2:,.0f} | {(image + 3000) / 2:,.0f} |" in text
    assert f"| {(prompt - cached + 3000) / 2:,.0f} |" in text and f"| {(prompt + 4000) / 2:,.0f} |" in text
    assert json.loads(json.dumps(summary))  # plain data for --json
