r"""Check the stand-in's cached tokens against vLLM's own prefix caching, one agent's request stream at a time.

Each ``requests-plain-AGENT.jsonl`` that ``run_agents.sh`` writes holds one agent's requests, in arrival
order, into a fresh stand-in server (an empty prefix cache). Its chat requests are replayed in that
order through

(a) the stand-in's own simulation: :func:`videoatlas_standin.messages.read_prompt`, the function its chat
    route calls (images hashed by their bytes), into a fresh :class:`~videoatlas_standin.tokens.PrefixCache` of
    the server's default capacity (``--cache-blocks N`` sets another, for both sides: a small one makes
    eviction matter);
(b) vLLM 0.33.0's own prefix caching: the prompt as vLLM would tokenize it for Qwen2.5-VL (below), one
    ``vllm.v1.request.Request`` each (a ``MultiModalFeatureSpec`` per image: vLLM's content hash as its
    identifier, the ``PlaceholderRange`` of its ``<|image_pad|>`` tokens), block hashes from
    ``get_request_block_hasher`` (sha256, the default ``prefix_caching_hash_algo``; 16-token blocks), and a
    ``KVCacheManager`` over one full-attention KV cache of as many blocks as the stand-in's cache holds
    (plus vLLM's null block): ``get_computed_blocks`` (the hit vLLM reports as ``cached_tokens``: scheduler.py
    passes it as ``num_local_cached_tokens``), ``allocate_slots`` for the rest, then ``free``. Hits, the
    last-token rule and eviction are vLLM's.

The prompt of (b), rule by rule:

* The chat template of Qwen/Qwen2.5-VL-7B-Instruct (its ``chat_template.json``; no model file can be
  downloaded here, so it is copied as :data:`QWEN25_VL_TEMPLATE`) rendered by transformers'
  ``apply_chat_template``, as vLLM renders a Hugging Face template: every message is
  ``<|im_start|>ROLE\n`` + its content + ``<|im_end|>\n``; an image part is
  ``<|vision_start|><|image_pad|><|vision_end|>``, text parts follow each other with nothing between; when
  the first message is not a system message, ``<|im_start|>system\nYou are a helpful
  assistant.<|im_end|>\n`` comes first; the generation prompt is ``<|im_start|>assistant\n``. The template
  renders no tool definitions and no tool calls.
* The conversation as vLLM's ``parse_chat_message_content`` hands it to a template of the "openai" content
  format (vllm/renderers/chat_utils/chat_message.py): ``content`` None is an empty list, a string is one
  text part, an ``image_url`` part is ``{"type": "image"}``, a tool message's text parts are joined by
  newlines.
* Text tokens from the Qwen tokenizer that ``check_requests.py`` builds from dashscope's ``qwen.tiktoken``,
  with ``<|vision_start|>``, ``<|vision_end|>`` and ``<|image_pad|>`` added as special tokens.
* Each ``<|image_pad|>`` repeated N times, as vLLM's Qwen2-VL processor replaces it
  (vllm/model_executor/models/qwen2_vl.py, ``_get_prompt_updates``: ``grid_thw.prod() // merge_size**2``):
  N = (h'/28)(w'/28) with ``h', w' = smart_resize(h, w, factor=28, min_pixels, max_pixels)``, the size
  read from the data URL's JPEG with PIL. vLLM imports ``smart_resize`` from
  transformers.models.qwen2_vl.image_processing_qwen2_vl, which needs torchvision (not installed here); the
  same function is taken from its PIL twin, image_processing_pil_qwen2_vl. The pixel bounds are those
  vLLM's processor loads for this model, its ``preprocessor_config.json``: ``min_pixels`` 3136 (56 x 56),
  ``max_pixels`` 12845056 (:data:`MIN_PIXELS`, :data:`MAX_PIXELS`), not the transformers class's own default
  (28 x 28 x 1280, which would shrink a 2560 px grid to 35 x 35 tokens). ``videoatlas serve`` lowers
  ``max_pixels`` to 2560 x 2560, which changes nothing for the images the agents send.
* The image's identifier: vLLM's ``MultiModalHasher`` over the data URL's original bytes (as it hashes an
  image loaded from a URL, a ``MediaWithBytes``), with the model id.

Printed per agent: requests, prompt tokens, cached tokens and cached share by each, the difference in
points, image tokens by each and the requests with the same cached tokens by both. Then the stand-in's
image token count is set against ``smart_resize``'s over a sweep of sizes. Exits 1 when an agent's cached
shares differ by more than :data:`TOLERANCE_POINTS`, or the image counts differ at any size.

    VLLM_TARGET_DEVICE=cpu .venv-vllm/bin/python conformance/prefix_cache.py out/conformance/requests-plain-*.jsonl
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from check_requests import CHAT, qwen_tokenizer, read_requests, say

TOLERANCE_POINTS = 5.0
"""The largest difference of cached share (in percentage points) taken as agreement."""
PATCH_PX = 28
BLOCK_TOKENS = 16
MODEL_ID = "Qwen/Qwen2.5-VL-7B-Instruct"
MIN_PIXELS = 3136
MAX_PIXELS = 12_845_056
"""Qwen2.5-VL's ``preprocessor_config.json`` (``min_pixels``, ``max_pixels``): the bounds of its image resize."""
QWEN25_VL_TEMPLATE = (
    "{% set image_count = namespace(value=0) %}{% set video_count = namespace(value=0) %}"
    "{% for message in messages %}{% if loop.first and message['role'] != 'system' %}"
    "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n{% endif %}"
    "<|im_start|>{{ message['role'] }}\n"
    "{% if message['content'] is string %}{{ message['content'] }}<|im_end|>\n"
    "{% else %}{% for content in message['content'] %}"
    "{% if content['type'] == 'image' or 'image' in content or 'image_url' in content %}"
    "{% set image_count.value = image_count.value + 1 %}"
    "{% if add_vision_id %}Picture {{ image_count.value }}: {% endif %}"
    "<|vision_start|><|image_pad|><|vision_end|>"
    "{% elif content['type'] == 'video' or 'video' in content %}"
    "{% set video_count.value = video_count.value + 1 %}"
    "{% if add_vision_id %}Video {{ video_count.value }}: {% endif %}"
    "<|vision_start|><|video_pad|><|vision_end|>"
    "{% elif 'text' in content %}{{ content['text'] }}{% endif %}{% endfor %}<|im_end|>\n"
    "{% endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)
"""Qwen/Qwen2.5-VL-7B-Instruct's chat_template.json (the 3B, 32B and 72B instruct models ship the same)."""
VISION_TOKENS = ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>")

NOT_CHECKED = (
    "the Hugging Face image processor itself (only its resize rule sets the image token counts)",
    "the model's own chat template and tokenizer files (the template is copied here, the tokenizer rebuilt "
    "from dashscope's qwen.tiktoken)",
    "tools and tool calls: the Qwen2.5-VL template renders neither (the stand-in counts calls as text); no "
    "recorded request carries any",
    "a request without a system message: Qwen2.5-VL's template then adds a default one, the stand-in does not "
    "(Qwen3-VL's template adds none); every recorded request has its own",
    "concurrency and chunked prefill: requests are replayed one at a time, each freed before the next",
    "blocks of generated tokens (vLLM caches them too; the recordings hold no replies)",
    "Qwen3-VL (32 px tokens, its own template) and hybrid models (larger KV blocks)",
)


@dataclass
class Tally:
    """One side's totals over an agent's requests."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    image_tokens: int = 0

    @property
    def share(self) -> float:
        """Cached tokens as a percentage of prompt tokens."""
        return 100.0 * self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


class StandinSide:
    """The stand-in's simulation: its own prompt tokens into its own prefix cache."""

    def __init__(self, capacity_blocks: int) -> None:
        from videoatlas_standin.tokens import PrefixCache

        self.cache = PrefixCache(capacity_blocks)
        self.tally = Tally()

    def replay(self, body: dict[str, Any]) -> int:
        """Cached tokens of one request (then its blocks are in the cache)."""
        from videoatlas_standin.messages import read_prompt

        tokens = read_prompt(body["messages"], PATCH_PX).tokens
        cached = self.cache.lookup_and_insert(tokens)
        self.tally.prompt_tokens += len(tokens)
        self.tally.cached_tokens += cached
        self.tally.image_tokens += sum(t.startswith("<img:") for t in tokens)
        return cached


class VllmSide:
    """vLLM's own requests, block hashes and KV cache manager, over Qwen2.5-VL's prompt."""

    def __init__(self, tokenizer: Any, capacity_blocks: int) -> None:
        import torch
        from vllm.utils.hashing import get_hash_fn_by_name
        from vllm.v1.core.kv_cache_manager import KVCacheManager
        from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
        from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec

        self.tokenizer = tokenizer
        tokenizer.add_tokens(list(VISION_TOKENS), special_tokens=True)
        self.image_pad = tokenizer.convert_tokens_to_ids("<|image_pad|>")
        hash_fn = get_hash_fn_by_name("sha256")
        init_none_hash(hash_fn)
        self.block_hasher = get_request_block_hasher(BLOCK_TOKENS, hash_fn)
        spec = FullAttentionSpec(block_size=BLOCK_TOKENS, num_kv_heads=1, head_size=1, dtype=torch.float16)
        config = KVCacheConfig(
            num_blocks=capacity_blocks + 1,  # block 0 is the pool's null block, never allocated
            kv_cache_tensors=[],
            kv_cache_groups=[KVCacheGroupSpec(["attention"], spec)],
        )
        self.manager = KVCacheManager(
            config, max_model_len=1 << 20, scheduler_block_size=BLOCK_TOKENS, hash_block_size=BLOCK_TOKENS
        )
        self.tally = Tally()
        self.served = 0

    def image_tokens(self, width: int, height: int) -> int:
        """``<|image_pad|>`` tokens of one image: Qwen2.5-VL's resize rule, one token per 28 px square."""
        from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

        h, w = smart_resize(height, width, factor=PATCH_PX, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
        return (h // PATCH_PX) * (w // PATCH_PX)

    def prompt(self, body: dict[str, Any]) -> tuple[list[int], list[Any]]:
        """Token ids of the request's prompt, and its images' features (identifier and placeholder range)."""
        from PIL import Image
        from vllm.multimodal.hasher import MultiModalHasher
        from vllm.multimodal.inputs import MultiModalFeatureSpec, PlaceholderRange
        from vllm.multimodal.media.base import MediaWithBytes

        conversation: list[dict[str, Any]] = []
        images: list[tuple[bytes, Image.Image]] = []
        for message in body["messages"]:
            content = message.get("content")
            parts = [] if content is None else [{"type": "text", "text": content}] if isinstance(content, str) else []
            for part in content if isinstance(content, list) else []:
                if part.get("type") == "image_url":
                    raw = base64.b64decode(str(part["image_url"]["url"]).split(",", 1)[1])
                    images.append((raw, Image.open(io.BytesIO(raw))))
                    parts.append({"type": "image"})
                else:
                    parts.append({"type": "text", "text": str(part.get("text", ""))})
            turn: dict[str, Any] = {"role": message["role"], "content": parts}
            if message["role"] == "tool":
                turn["content"] = "\n".join(p["text"] for p in parts)
            conversation.append(turn)
        text = self.tokenizer.apply_chat_template(
            conversation, chat_template=QWEN25_VL_TEMPLATE, add_generation_prompt=True, tokenize=False
        )
        ids: list[int] = []
        features: list[Any] = []
        pending = iter(images)
        for token in self.tokenizer.encode(text, add_special_tokens=False):
            if token != self.image_pad:
                ids.append(token)
                continue
            raw, image = next(pending)
            n = self.image_tokens(*image.size)
            identifier = MultiModalHasher.hash_kwargs("blake3", model_id=MODEL_ID, image=MediaWithBytes(image, raw))
            features.append(MultiModalFeatureSpec(None, "image", identifier, PlaceholderRange(len(ids), n)))
            ids.extend([token] * n)
        return ids, features

    def replay(self, body: dict[str, Any]) -> int:
        """Cached tokens of one request, as vLLM's KV cache manager finds them; then it runs and is freed."""
        from vllm.sampling_params import SamplingParams
        from vllm.v1.request import Request

        ids, features = self.prompt(body)
        self.served += 1
        request = Request(
            f"replay-{self.served}",
            ids,
            SamplingParams(max_tokens=1),
            None,
            mm_features=features,
            block_hasher=self.block_hasher,
        )
        blocks, cached, _ = self.manager.get_computed_blocks(request)
        if self.manager.allocate_slots(request, request.num_tokens - cached, cached, blocks) is None:
            raise SystemExit(f"prefix_cache: a {request.num_tokens}-token prompt does not fit the KV cache")
        self.manager.free(request)
        self.tally.prompt_tokens += len(ids)
        self.tally.cached_tokens += cached
        self.tally.image_tokens += sum(f.mm_position.length for f in features)
        return cached


def image_rule_differences() -> list[tuple[int, int, int, int]]:
    """Image sizes (1 to 4,000 px a side, and the agents' grid sizes) where the stand-in's count is not vLLM's.

    Each is ``(width, height, stand-in tokens, vLLM tokens)``.
    """
    from transformers.models.qwen2_vl.image_processing_pil_qwen2_vl import smart_resize

    from videoatlas_standin.tokens import image_token_count

    sides = sorted({*range(1, 4001, 13), *(k * c for k in range(2, 9) for c in (32, 64, 128, 160, 256, 320))})
    out = []
    for width in sides:
        for height in sides:
            if max(width, height) / min(width, height) > 200:  # smart_resize refuses these
                continue
            h, w = smart_resize(height, width, factor=PATCH_PX, min_pixels=MIN_PIXELS, max_pixels=MAX_PIXELS)
            theirs, ours = (h // PATCH_PX) * (w // PATCH_PX), image_token_count(width, height, PATCH_PX)
            if ours != theirs:
                out.append((width, height, ours, theirs))
    return out


def agent_of(path: Path) -> str:
    """The agent a recording is of: ``requests-plain-AGENT.jsonl`` -> AGENT."""
    return path.stem.removeprefix("requests-").removeprefix("plain-")


def compare(path: Path, tokenizer: Any, capacity_blocks: int) -> dict[str, Any]:
    """Replay one recording through both sides; their tallies and the difference in cached share."""
    bodies = read_requests([path]).get(CHAT, [])
    standin, vllm = StandinSide(capacity_blocks), VllmSide(tokenizer, capacity_blocks)
    same = sum(standin.replay(body) == vllm.replay(body) for body in bodies)
    return {
        "agent": agent_of(path),
        "requests": len(bodies),
        "same_cached_tokens": same,
        "standin": asdict(standin.tally) | {"cached_share": round(standin.tally.share, 2)},
        "vllm": asdict(vllm.tally) | {"cached_share": round(vllm.tally.share, 2)},
        "difference_points": round(standin.tally.share - vllm.tally.share, 2),
    }


def main(argv: list[str] | None = None) -> int:
    """Compare every recording given; print the table; 0 when every agent agrees within the tolerance."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("records", nargs="+", type=Path, help="requests-plain-AGENT.jsonl files from run_agents.sh")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures to this JSON file")
    parser.add_argument(
        "--cache-blocks", type=int, default=None, help="cache capacity in blocks (default: the stand-in's default)"
    )
    args = parser.parse_args(argv)
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    import vllm

    from videoatlas_standin.tokens import PrefixCache

    capacity = args.cache_blocks or PrefixCache().capacity
    tokenizer = qwen_tokenizer()
    rows = [compare(path, tokenizer, capacity) for path in args.records]
    say(
        f"prefix caching, the stand-in's simulation vs vLLM {vllm.__version__}'s KV cache manager "
        f"(Qwen2.5-VL prompt, {capacity} blocks of {BLOCK_TOKENS} tokens)"
    )
    say(f"{'agent':<11} {'requests':>8} {'prompt tokens':>19} {'cached tokens':>19} {'cached share':>15} {'diff':>6}")
    say(f"{'':<11} {'':>8} {'stand-in':>9} {'vLLM':>9} {'stand-in':>9} {'vLLM':>9} {'stand-in':>8} {'vLLM':>6}")
    failed = []
    for row in rows:
        s, v, diff = row["standin"], row["vllm"], row["difference_points"]
        mark = "" if abs(diff) <= TOLERANCE_POINTS else "  DIFFERS"
        failed += [row["agent"]] if mark else []
        say(
            f"{row['agent']:<11} {row['requests']:>8} {s['prompt_tokens']:>9} {v['prompt_tokens']:>9} "
            f"{s['cached_tokens']:>9} {v['cached_tokens']:>9} {s['cached_share']:>7.1f}% {v['cached_share']:>5.1f}% "
            f"{diff:>+6.1f}{mark}"
        )
        say(
            f"{'':<11} image tokens: stand-in {s['image_tokens']}, vLLM {v['image_tokens']}; "
            f"the same cached tokens in {row['same_cached_tokens']} of {row['requests']} requests"
        )
    say(f"{len(rows) - len(failed)}/{len(rows)} agents within {TOLERANCE_POINTS:g} points of vLLM's cached share")
    differ = image_rule_differences()
    said = f"{len(differ)} sizes differ, e.g. {differ[:3]} (width, height, stand-in, vLLM)" if differ else "the same"
    say(f"image tokens by size, 1 to 4,000 px a side: the stand-in's count and smart_resize's: {said}")
    say("not checked: " + "; ".join(NOT_CHECKED))
    if args.json is not None:
        report = {
            "vllm": vllm.__version__,
            "tolerance_points": TOLERANCE_POINTS,
            "cache_blocks": capacity,
            "agents": rows,
        }
        report["image_rule_differences"] = [list(d) for d in differ]
        args.json.write_text(json.dumps(report | {"not_checked": list(NOT_CHECKED)}, indent=2), encoding="utf-8")
    return 1 if failed or differ else 0


if __name__ == "__main__":
    sys.exit(main())
