"""The stand-in's usage accounting, value by value: text pieces, image tokens, the prompt's layout, the prefix cache.

``conformance/prefix_cache.py`` checks the same rules against vLLM's own tokenizer, image resize and KV cache
manager over the agents' real request streams; these tests pin them down on cases worked out by hand.
"""

from __future__ import annotations

import base64
import hashlib
import io

from hypothesis import given
from hypothesis import strategies as st
from PIL import Image

from videoatlas_standin.messages import read_prompt
from videoatlas_standin.tokens import PrefixCache, image_token_count, prompt_tokens, text_pieces

SYSTEM = " ".join(["word"] * 23)  # 23 pieces: with its frame (3 + 2 tokens) the system message is 28 tokens
QUESTION = "Which one is it now?"  # 6 pieces


def test_text_is_cut_where_qwens_tokenizer_cuts_it() -> None:
    assert text_pieces("Hello world, 2024!\n") == ["Hello", " world", ",", " ", "2", "0", "2", "4", "!\n"]
    assert text_pieces("Cells:\n0: 00:28.27\n\n  x") == [
        "Cells", ":\n", "0", ":", " ", "0", "0", ":", "2", "8", ".", "2", "7", "\n\n", " ", " x"
    ]  # fmt: skip
    # A word is one token per 8 letters, a run of symbols one per 2; contractions stand alone.
    assert text_pieces('internationalization {"a": [1]}') == [
        "internat", "ionaliza", "tion", ' {"', "a", '":', " [", "1", "]}"
    ]  # fmt: skip
    assert text_pieces("it's snake_case") == ["it", "'s", " snake", "_case"]


@given(st.text())
def test_text_pieces_join_back_into_the_text(text: str) -> None:
    assert "".join(text_pieces(text)) == text


def test_an_image_costs_its_size_after_qwens_resize_one_token_per_patch() -> None:
    # Sides rounded to the nearest multiple (not up): 2560 / 28 = 91.4 -> 91, 640 x 360 -> 23 x 13.
    assert image_token_count(2560, 2560) == 91 * 91 and image_token_count(2560, 2560, 32) == 80 * 80
    assert image_token_count(640, 360) == 23 * 13 and image_token_count(1280, 720) == 46 * 26
    assert image_token_count(70, 70) == 2 * 2 and image_token_count(98, 98) == 4 * 4  # halves go to even
    # Under min_pixels (56 x 56 px for 28 px tokens, 256 x 256 for 32) the image is scaled up, sides ceiled;
    assert image_token_count(29, 28) == 2 * 3 and image_token_count(10, 10) == 2 * 2
    assert image_token_count(100, 100, 32) == 8 * 8
    # over max_pixels (16,384 tokens) scaled down, sides floored.
    assert image_token_count(4000, 4000) == 128 * 128 and image_token_count(5000, 1000) == 179 * 36


def test_a_prompt_is_laid_out_as_the_qwen_chat_template_lays_it_out() -> None:
    tokens = prompt_tokens([("system", ["Be brief."]), ("user", [("f00d", 56, 56), "Which", " one?"])])
    assert tokens == [
        "<|im_start|>", "system", "\n", "Be", " brief", ".", "<|im_end|>", "\n",
        "<|im_start|>", "user", "\n",
        "<|vision_start|>", "<img:f00d:0>", "<img:f00d:1>", "<img:f00d:2>", "<img:f00d:3>", "<|vision_end|>",
        "Which", " one", "?", "<|im_end|>", "\n",
        "<|im_start|>", "assistant", "\n",
    ]  # fmt: skip
    # Every message is framed, also two in a row from the same role.
    assert prompt_tokens([("user", ["a"]), ("user", ["b"])]).count("<|im_start|>") == 3


def _request(image: str) -> list[tuple[str, list[str | tuple[str, int, int]]]]:
    """System (28 tokens), user header (3), an image of 4 tokens between its 2 marks, the question (6), the
    closing (2), the generation prompt (3): 48 tokens, three full blocks, the image starting at 32."""
    return [("system", [SYSTEM]), ("user", [(image, 56, 56), QUESTION])]


def test_a_stream_of_requests_is_served_from_the_cache_block_by_block() -> None:
    cache = PrefixCache()
    first, other = prompt_tokens(_request("aa")), prompt_tokens(_request("bb"))
    assert len(first) == len(other) == 48 and first[31] == "<|vision_start|>"
    assert cache.lookup_and_insert(first) == 0
    # Another image after the same 32 tokens: the two blocks before it are cached, the third is not.
    assert cache.lookup_and_insert(other) == 32
    # The same prompt again: all three blocks are cached, but the last token is always computed.
    assert cache.lookup_and_insert(first) == 32
    # The conversation goes on: the earlier prompt, generation prompt included, is all cached.
    going_on = prompt_tokens([*_request("aa"), ("assistant", ["B."]), ("user", ["Why?"])])
    assert going_on[:48] == first and cache.lookup_and_insert(going_on) == 48
    assert (cache.queries, cache.hits) == (48 * 3 + len(going_on), 32 + 32 + 48)


def test_a_full_cache_evicts_the_least_recent_prompt_tail_first() -> None:
    cache = PrefixCache(capacity_blocks=3)
    first = prompt_tokens(_request("aa"))
    unrelated = prompt_tokens([("system", [" ".join(["other"] * 11)])])  # 19 tokens: one full block
    cache.lookup_and_insert(first)
    assert cache.lookup_and_insert(unrelated) == 0
    # The unrelated block took the place of the first prompt's last block, so its first two still serve.
    assert cache.lookup_and_insert(first) == 32


def _data_url(width: int, height: int, colour: str) -> tuple[str, str]:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, "JPEG")
    raw = buffer.getvalue()
    return "data:image/jpeg;base64," + base64.b64encode(raw).decode(), hashlib.sha256(raw).hexdigest()


def test_a_requests_messages_give_the_tokens_of_its_parts() -> None:
    url, sha = _data_url(56, 56, "red")
    image = {"type": "image_url", "image_url": {"url": url}}
    messages = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": [image, {"type": "text", "text": QUESTION}]},
        {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "look", "arguments": "{}"}}]},
    ]
    prompt = read_prompt(messages, 28)
    assert prompt.texts == [("system", SYSTEM), ("user", QUESTION)] and [i.sha256 for i in prompt.images] == [sha]
    assert prompt.tokens == prompt_tokens([*_request(sha), ("assistant", ["look({})"])])
