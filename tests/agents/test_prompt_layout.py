"""Prompts laid out for a server's prefix cache: where a template puts its images, and what calls share first.

vLLM reuses the leading blocks of a prompt it has seen (images keyed by their content), so the layout decides
how much of a call's prefill is served from cache. A user template may place the call's images with
``${images}`` on a line of its own: the text above goes first, the rest after the images. Without it the
images come first, as before. EEA's calls are checked in ``test_eea_scripted.py``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agent_helpers import default_reply, run_graph, step, user_head
from prompt_helpers import copy_default
from videoatlas.agents.eea.agent import AGENT as EEA
from videoatlas.errors import BadInputError
from videoatlas.llm.client import VLMClient
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.config import RunConfig

pytestmark = pytest.mark.unit


def test_images_placeholder_splits_the_user_text_where_the_template_puts_it(tmp_path: Path) -> None:
    prompts = EEA.load_prompts()
    values = {
        "question": "Is ${images} a word?",  # a value that looks like the placeholder is only text
        "choices": "A. yes\nB. no",
        "duration": "10:00",
        "history": "stretch 2: 0-10 s, score 40: a door",
        "round": 2, "segment": "0-10 s", "count": 3, "frames": "1, 2, 3", "children": "stretch 5: 0-3 s",
        "speech": "(none)", "anchor_request": "", "query_request": "",
    }  # fmt: skip
    said = prompts.call("system", "evaluate", values)
    assert said.head.startswith("Question: Is ${images} a word?\nChoices:\nA. yes\nB. no\n\n")
    assert said.head.endswith("stretch 2: 0-10 s, score 40: a door\n")
    assert said.user.startswith("This is round 2: the stretch 0-10 s was opened with 3 frames")
    assert "${images}" not in said.user and "\x1e" not in said.head + said.user
    # A set whose template does not place the images sends them first: all its text comes after them.
    folder = copy_default(tmp_path / "mine", "videoatlas.agents.eea")
    (folder / "evaluate.user.txt").write_text("Q: ${question}\nScore ${children}.\n")
    plain = EEA.load_prompts(str(folder)).call("system", "evaluate", values)
    assert (plain.head, plain.user) == ("", "Q: Is ${images} a word?\nScore stretch 5: 0-3 s.\n")


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("${images}\nQ: ${question} ${children}\n${images}\n", "places the images more than once"),
        ("Q: ${question} ${images} ${children}\n", "must put ${images} on a line of its own"),
    ],
)
def test_a_misplaced_images_placeholder_is_refused_when_the_set_loads(tmp_path: Path, text: str, problem: str) -> None:
    folder = copy_default(tmp_path / "mine", "videoatlas.agents.eea")
    (folder / "evaluate.user.txt").write_text(text)
    with pytest.raises(BadInputError, match=f"evaluate.user.txt {problem.replace('$', '.').replace('{', '.')}"):
        EEA.load_prompts(str(folder))


def test_the_message_holds_the_head_then_the_images_then_the_rest() -> None:
    client = VLMClient.__new__(VLMClient)
    image = ImagePart(b"\xff\xd8jpeg", 28, 28, "x")
    messages = client.build_messages("sys", [image, image], "after", "before\n")
    parts = messages[1].content
    assert [p["type"] for p in parts] == ["text", "image_url", "image_url", "text"]  # type: ignore[index]
    assert (parts[0]["text"], parts[-1]["text"]) == ("before\n", "after")  # type: ignore[index]
    # Without images the user's text is one part, as a call without images always was.
    assert client.build_messages("sys", [], "after", "before\n")[1].content == [
        {"type": "text", "text": "before\nafter"}
    ]
    first = client.build_messages("sys", [image], "after")[1].content  # no head: the images first
    assert [p["type"] for p in first] == ["image_url", "text"]  # type: ignore[index]


async def test_video_rlm_master_calls_share_their_start_and_a_worker_describes_its_view_first(
    counter_video: Path, tmp_path: Path
) -> None:
    """The uncertainty analysis and the decision of a round send the same images and open with the same text
    (question, choices, the evidence); a worker's text opens with its view (span and cells), which is the same
    for every question that looks there, before the question."""

    def script(name: str, text: str, schema: dict[str, Any]) -> Any:
        if name == "WorkerStep" and "ADD_TO_SCRATCHPAD" in text and "(nothing yet)" in text:
            return step("ADD_TO_SCRATCHPAD", cells=[1], summary="a number")
        return default_reply(name, text, schema)

    config = RunConfig.of(cell_px=64, workers=2)
    out, chat, _ = await run_graph(counter_video, tmp_path, script, config)
    names = [n for n, _ in chat.seen]
    texts = [t for _, t in chat.seen]
    uncertainty, decide = names.index("UncertaintyAnalysis"), names.index("FinalDecision")
    assert chat.images[uncertainty] == chat.images[decide] and len(chat.images[decide]) == 2  # root grid, evidence
    shared = texts[uncertainty].split("Search task:")[0]
    assert "Question: What number is shown?" in shared and "[A] @" in shared and "a number" in shared
    assert texts[decide].split("Make the final decision.")[0] == shared
    sent = zip(chat.seen, chat.messages, strict=True)
    workers = [m[1].content[-1]["text"] for (n, _), m in sent if n == "WorkerStep"]  # type: ignore[index]
    assert workers and all(t.startswith("You are looking at ") for t in workers)
    assert all(t.index("Cells, by start time") < t.index("Question: What number is shown?") for t in workers)
    assert all(user_head(m) == "" for m in chat.messages)  # Video-RLM's templates send their images first
    assert out["answer"] is not None
