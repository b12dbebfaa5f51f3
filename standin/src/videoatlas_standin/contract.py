"""vLLM's request contract, enforced by the stand-in with the libraries vLLM itself uses.

A test that passes against the stand-in must not fail against vLLM for a protocol reason, so the stand-in refuses
what vLLM 0.33's OpenAI server refuses, with its status, error type and message. Reply schemas are checked as
vLLM's ``auto`` backend does (xgrammar where installed, unless vLLM's feature check declines, then guidance) and
compiled by llguidance; the stand-in's own replies are decoded through that grammar (:meth:`Grammar.accepts`).
"""

from __future__ import annotations

import importlib
import json
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, ClassVar, Literal

import llguidance
from aiohttp import web

from videoatlas.state.portable import guidance_unsupported, xgrammar_unsupported

Backend = Literal["auto", "xgrammar", "guidance"]
BACKENDS: tuple[Backend, ...] = ("auto", "xgrammar", "guidance")


@dataclass(frozen=True, slots=True)
class Refusal:
    """An error vLLM's server would answer with (its ``ErrorResponse``: message, type, param, code)."""

    status: int
    message: str
    kind: str = "BadRequestError"
    param: str | None = None

    def response(self) -> web.Response:
        """The error as an HTTP response: OpenAI's error body, field for field."""
        error = {"message": self.message, "type": self.kind, "param": self.param, "code": self.status}
        return web.json_response({"error": error}, status=self.status)


class _ByteTokenizer:
    """A tokenizer of single bytes: enough for llguidance to decide whether a text fits a grammar."""

    eos_token_id = 256
    bos_token_id = None
    tokens: ClassVar[list[bytes]] = [bytes([i]) for i in range(256)] + [b"<|end|>"]
    special_token_ids: ClassVar[list[int]] = [256]

    def __call__(self, text: bytes | str) -> list[int]:
        return list(text.encode() if isinstance(text, str) else text)


@lru_cache(maxsize=1)
def _tokenizer() -> llguidance.LLTokenizer:
    return llguidance.LLTokenizer(llguidance.TokenizerWrapper(_ByteTokenizer()), slices=[])


@dataclass(frozen=True, slots=True)
class Grammar:
    """A reply schema compiled by llguidance, as vLLM's guidance backend compiles it."""

    grammar: str

    def accepts(self, text: str) -> tuple[bool, str]:
        """Whether a constrained decoder could have produced ``text``; the parser's error otherwise."""
        matcher = llguidance.LLMatcher(_tokenizer(), self.grammar, log_level=0)
        for token in _tokenizer().tokenize_bytes(text.encode()):
            if not matcher.consume_token(token):
                return False, matcher.get_error().splitlines()[0] if matcher.get_error() else "rejected"
        if not matcher.is_accepting():
            return False, "the reply is cut short of what the grammar requires"
        return True, ""


@dataclass(frozen=True, slots=True)
class StructuredOutputs:
    """What vLLM's structured-output validation gives a request: the grammar its reply is decoded through."""

    grammar: Grammar


def _guidance(schema: dict[str, Any]) -> Grammar | Refusal:
    # vLLM's guidance backend: flexible whitespace, the schema as given (additionalProperties as sent).
    try:
        grammar = llguidance.LLMatcher.grammar_from_json_schema(schema, defaults={"whitespace_flexible": True})
    except (ValueError, KeyError, TypeError) as exc:
        return Refusal(400, f"Invalid grammar specification: {exc}")
    error = llguidance.LLMatcher.validate_grammar(grammar, _tokenizer())
    if error:
        return Refusal(400, f"Grammar error: {error}")
    return Grammar(grammar)


def _xgrammar_refusal(schema: dict[str, Any]) -> Refusal | None:
    if xgrammar_unsupported(schema) is not None:
        return Refusal(400, "The provided JSON schema contains features not supported by xgrammar.")
    try:
        xgr = importlib.import_module("xgrammar")
    except ImportError:  # not installed here: the schema is compiled by llguidance alone
        return None
    try:
        xgr.Grammar.from_json_schema(json.dumps(schema))
    except Exception as exc:  # xgrammar raises plain RuntimeErrors from C++; vLLM turns any of them into a 400
        return Refusal(400, f"Failed to transform json schema into a grammar: {exc}")
    return None


def structured_outputs(schema: Any, backend: Backend = "auto") -> StructuredOutputs | Refusal:
    """Validate a ``response_format`` schema as vLLM does under ``backend``; the grammar to decode with."""
    if not isinstance(schema, dict):
        return Refusal(400, "Invalid JSON grammar specification.")
    declined = None if backend == "guidance" else _xgrammar_refusal(schema)
    if declined is not None and backend == "xgrammar":
        return declined
    if declined is not None:  # auto: xgrammar declined, so vLLM falls back to guidance (unless it cannot take it)
        unsupported = guidance_unsupported(schema)
        if unsupported is not None:
            return Refusal(400, f"{declined.message} No fallback backend accepts {unsupported}.")
    # Whichever backend takes it, the reply is decoded through llguidance's grammar of the same schema.
    compiled = _guidance(schema)
    return compiled if isinstance(compiled, Refusal) else StructuredOutputs(compiled)


def token_limit(body: dict[str, Any]) -> int | Refusal | None:
    """The output-token limit a request asks for (``max_completion_tokens``, else the deprecated ``max_tokens``)."""
    for name in ("max_completion_tokens", "max_tokens"):
        value = body.get(name)
        if value is None:
            continue
        if isinstance(value, bool) or not isinstance(value, int):
            return Refusal(400, f"{name} must be an integer", param=name)
        if value < 1:
            return Refusal(400, f"{name} must be at least 1, got {value}.", param=name)
        return value
    return None


def image_limit(count: int, limit: int) -> Refusal | None:
    """The refusal vLLM answers to more images than ``--limit-mm-per-prompt`` allows."""
    if count <= limit:
        return None
    return Refusal(
        400,
        f"At most {limit} image(s) may be provided in one prompt. Set `--limit-mm-per-prompt` to increase this limit.",
        param="image",
    )


def context_limit(prompt_tokens: int, max_model_len: int, generated: int = 0) -> Refusal | None:
    """The refusal vLLM answers to a prompt that leaves no room in the context (``--max-model-len``).

    ``generated``: the tokens it must leave room for (a decision's one read), refused by vLLM's renderer in its words.
    """
    if prompt_tokens + generated <= max_model_len:
        return None
    message = (
        f"This model's maximum context length is {max_model_len} tokens. However, your prompt contains "
        f"{prompt_tokens} input tokens, which exceeds this limit even without any output tokens. "
        "Please reduce the length of the input prompt."
    )
    if generated:
        return vllm_validation(message, "input_tokens", prompt_tokens)
    return Refusal(400, message, param="input_tokens")


def output_budget(prompt_tokens: int, requested: int | None, max_model_len: int) -> int:
    """How many tokens the reply may have: what was asked for, within what the context leaves (as vLLM clamps)."""
    room = max_model_len - prompt_tokens
    return room if requested is None else min(room, requested)


def vllm_validation(message: str, parameter: str | None, value: Any = None) -> Refusal:
    """The body vLLM answers a ``VLLMValidationError`` with: its message, then the parameter and value it names."""
    extras = [f"{k}={v}" for k, v in (("parameter", parameter), ("value", value)) if v is not None]
    return Refusal(400, f"{message} ({', '.join(extras)})" if extras else message, param=parameter)


# vLLM's validation handler (entrypoints/serve/exception_handling/handlers/validation.py), which formats
# FastAPI's RequestValidationError: at most 10 errors, each input summarised, each location cleaned.
_MAX_REPORTED_ERRORS = 10
_MAX_ERROR_INPUT_CHARS = 200
_MAX_ERROR_CHARS = 1000
_INTERNAL_LOC = frozenset(
    "function-wrap function-after function-before function-plain json-or-python lax-or-strict "  # noqa: SIM905
    "chain default nullable tagged-union union call arguments is-instance is-subclass callable str int float "
    "bool bytes bytearray list tuple dict set frozenset complex none nonetype".split()
)
"""Segments of a pydantic error location that name its machinery, not a field (vLLM leaves them out)."""
_SANITIZE = (
    (re.compile(r" at 0x[0-9a-fA-F]+>"), ">"),
    (re.compile(r'\n?\s*File "[^"]+", line \d+, in \S+(\n\s+.*)?'), ""),
    (re.compile(r"/(?:home|usr|opt|var|tmp|root|lib|mnt|srv)(?:/[\w.\-]+)+"), "<path>"),
    (re.compile(r"(?:/[\w\-]+)+/[\w\-]+\.\w+"), "<path>"),
)


def _summary(value: Any) -> str:
    if isinstance(value, bytes | bytearray):
        return f"<{type(value).__name__} of {len(value)} bytes>"
    if isinstance(value, list | tuple | set | frozenset | dict):
        return f"<{type(value).__name__} of {len(value)} items>"
    text = str(value)
    return text[:_MAX_ERROR_INPUT_CHARS] + "...[truncated]" if len(text) > _MAX_ERROR_INPUT_CHARS else text


def _clean_loc(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc if not (re.search(r"[\[\]{}()]", str(p)) or str(p).lower() in _INTERNAL_LOC)]
    return ".".join(parts) if parts else ".".join(str(p) for p in loc)


def _format_error(error: Any) -> str:
    if isinstance(error, dict):
        error = dict(error)
        if "input" in error:
            error["input"] = _summary(error["input"])
        if isinstance(error.get("loc"), tuple | list):
            error["loc"] = _clean_loc(tuple(error["loc"]))
    text = str(error)
    return text[:_MAX_ERROR_CHARS] + "...[truncated]" if len(text) > _MAX_ERROR_CHARS else text


def request_validation(errors: list[Any]) -> Refusal:
    """The body vLLM answers FastAPI's validation ``errors`` of a request with (error dicts located in ``body``)."""
    first = errors[0] if errors else None
    loc = first.get("loc") if isinstance(first, dict) else None
    param = _clean_loc(tuple(loc)) if loc else None
    if errors:
        label = "error" if len(errors) == 1 else "errors"
        message = f"{len(errors)} validation {label}:\n"
        message += "".join(f"  {_format_error(e)}\n" for e in errors[:_MAX_REPORTED_ERRORS])
        if len(errors) > _MAX_REPORTED_ERRORS:
            message += f"  ...and {len(errors) - _MAX_REPORTED_ERRORS} more {label}\n"
        message = message.rstrip()
    else:
        message = "Validation error"
    for pattern, replacement in _SANITIZE:
        message = pattern.sub(replacement, message)
    return Refusal(400, message.strip(), "Bad Request", param)
