"""vLLM 0.33.0's own embeddings, transcription and decisions routes, served in-process, stopped at the engine.

``make conformance`` checks recorded requests by sending each one, as it was sent, through vLLM's
real FastAPI routers (``/v1/embeddings``, ``/v1/audio/transcriptions``, ``/v1/decisions``) with vLLM's
exception handlers, into vLLM's real serving classes (``ServingEmbedding``, ``OpenAIServingTranscription``,
``OpenAIServingDecisions``),
over Starlette's in-process test client. So FastAPI parses the body (JSON, or the multipart form into
``TranscriptionRequest`` the way ``Annotated[TranscriptionRequest, Form()]`` does), vLLM's request
models and validators run, and vLLM's serving code runs every check it makes before inference. A
refusal comes back as vLLM's own HTTP status and error body.

What needs a model's files is replaced, and nothing else:

* the model config is a namespace holding the few facts the serving code reads (context length,
  pooler config, embedding size, no Matryoshka: the facts of a plain text or multimodal embedding
  model; Whisper's 16 kHz, 30 s clips for speech, as its feature extractor states them);
* the renderer (chat template, tokenizer, image processor) is not run: it would need the model's
  tokenizer and processor files. Each prompt passes through it unchanged;
* the engine is a stop: a request that reaches ``engine_client.encode`` / ``generate`` has passed
  every check, and the route answers 200 with what reached it (:class:`Reached`);
* the speech model class is vLLM's ``WhisperForConditionalGeneration`` (its language validation, its
  prompt, its segment-timestamp support), less the one class method that loads Whisper's processor;
  a request without a language would have Whisper detect it, a run of the model: here it hears English;
* the decisions route's read strategy has the limits of vLLM's ``NextTokenStrategy`` (the one Qwen3 and
  Qwen3.5 get: 64 questions, 26 options, no joint reads), and its ``read`` is the stop: rendering each
  question's prompt needs the model's tokenizer and chat template (``Reached("read")``).
"""

from __future__ import annotations

import os
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

SERVED = "served-model"
"""The model name the in-process server serves (requests are checked with their own model name replaced)."""
MAX_MODEL_LEN = 65536
EMBEDDING_SIZE = 1024


@dataclass
class Reached(Exception):
    """A request that reached the engine: vLLM accepted it (raised by the stop, answered 200)."""

    kind: str
    params: Any
    prompts: list[Any] = field(default_factory=list)


class _Renderer:
    """Passes prompts through unchanged: rendering needs the model's tokenizer and processor files."""

    tokenizer = None

    def __init__(self) -> None:
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="conformance-render")

    def render_chat(self, conversations: Any, chat_params: Any, tok_params: Any = None, **_: Any) -> Any:
        return [list(c) for c in conversations], [{"type": "chat", "conversation": c} for c in conversations]

    def render_cmpl(self, prompts: Any, tok_params: Any = None, **_: Any) -> list[Any]:
        return list(prompts)

    async def render_cmpl_async(self, prompts: Any, tok_params: Any = None, **_: Any) -> list[Any]:
        return list(prompts)


class _Engine:
    """The engine client the serving classes hold; ``encode`` and ``generate`` are the stop."""

    errored = False
    input_processor = None

    def __init__(self, model_config: Any) -> None:
        self.model_config = model_config
        self.renderer = _Renderer()
        self.vllm_config = SimpleNamespace(model_config=model_config, kv_transfer_config=None)

    def check_admission(self, n: int = 1) -> None:
        """The server is idle: every request is admitted."""

    def is_tracing_enabled(self) -> bool:
        return False

    def encode(self, *, request_id: str, prompt: Any, pooling_params: Any, **_: Any) -> Any:
        raise Reached("encode", pooling_params, [prompt])

    def generate(self, prompt: Any, sampling_params: Any, request_id: str, **_: Any) -> Any:
        raise Reached("generate", sampling_params, [prompt])


def _model_config(model_dir: str, encoder_decoder: bool) -> Any:
    """The facts of a served model that the embeddings or the transcription serving code reads before inference."""
    from vllm.config import PoolerConfig

    return SimpleNamespace(
        model=model_dir,
        revision=None,
        served_model_name=SERVED,
        max_model_len=MAX_MODEL_LEN,
        pooler_config=PoolerConfig(),
        encoder_config=None,
        multimodal_config=None,
        is_encoder_decoder=encoder_decoder,
        hf_config=SimpleNamespace(),
        embedding_size=EMBEDDING_SIZE,
        is_matryoshka=False,
        matryoshka_dimensions=None,
        get_diff_sampling_param=dict,
    )


def _whisper() -> type[Any]:
    """The Whisper class of vLLM, with its speech-to-text config written down (vLLM reads it from the processor)."""
    from vllm.config import SpeechToTextConfig
    from vllm.model_executor.models.whisper import WhisperForConditionalGeneration

    class Whisper(WhisperForConditionalGeneration):  # type: ignore[misc,no-untyped-call,unused-ignore]
        @classmethod
        def get_speech_to_text_config(cls, model_config: Any, task_type: str) -> Any:
            # WhisperFeatureExtractor's chunk_length and sampling_rate, the same for every Whisper size.
            return SpeechToTextConfig(max_audio_clip_s=30, sample_rate=16000)

    return Whisper


def _reads(engine: _Engine) -> Any:
    """The read strategy of Qwen3 and Qwen3.5 as far as it goes without the model: its limits; a read is the stop."""
    from vllm.entrypoints.openai.decisions.strategies import NextTokenStrategy, ReadContext, ReadStrategy

    class Reads(ReadStrategy):  # type: ignore[misc,unused-ignore]
        def limits(self) -> Any:
            return NextTokenStrategy.limits(self)  # type: ignore[arg-type,unused-ignore]

        async def read(self, questions: Any, instructions: Any, state: str, **_: Any) -> Any:
            raise Reached("read", [q.options for q in questions], [state])

    context = ReadContext(
        engine_client=engine,  # type: ignore[arg-type,unused-ignore]
        online_renderer=None,  # type: ignore[arg-type,unused-ignore]
        chat_template=None,
        chat_template_content_format="auto",
        default_chat_template_kwargs={},
    )
    return Reads(context)


def app() -> Any:
    """A FastAPI app with vLLM's embeddings and transcription routers, handlers and serving classes."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    from fastapi import FastAPI, Request
    from fastapi.responses import JSONResponse
    from vllm import envs
    from vllm.entrypoints.openai.decisions.api_router import router as decisions_router
    from vllm.entrypoints.openai.decisions.serving import OpenAIServingDecisions
    from vllm.entrypoints.openai.models.protocol import BaseModelPath
    from vllm.entrypoints.openai.models.serving import OpenAIModelRegistry
    from vllm.entrypoints.pooling.embed.api_router import router as embed_router
    from vllm.entrypoints.pooling.embed.serving import ServingEmbedding
    from vllm.entrypoints.serve.exception_handling.register import init_exception_handler
    from vllm.entrypoints.speech_to_text.base.serving import SpeechToTextBaseServing
    from vllm.entrypoints.speech_to_text.transcription.api_router import router as transcription_router
    from vllm.entrypoints.speech_to_text.transcription.serving import OpenAIServingTranscription
    from vllm.renderers.chat_utils import ChatTemplateConfig
    from vllm.utils.async_utils import make_async_with_semaphore

    folder = tempfile.mkdtemp(prefix="conformance-model-")  # an empty model folder: no file is found, none fetched
    embedder, speech = _model_config(folder, False), _model_config(folder, True)
    served = [BaseModelPath(name=SERVED, model_path=folder)]
    whisper = _whisper()

    class Transcription(OpenAIServingTranscription):  # type: ignore[misc,unused-ignore]
        """vLLM's transcription serving; its constructor less what loads Whisper's tokenizer and processor."""

        model_cls = whisper

        def __init__(self) -> None:
            engine: Any = _Engine(speech)  # the engine client and model list the serving code reads, no more
            models: Any = OpenAIModelRegistry(speech, served)
            super(SpeechToTextBaseServing, self).__init__(engine_client=engine, models=models, request_logger=None)
            # As SpeechToTextBaseServing.__init__ sets them; its tokenizer serves only after inference.
            self.default_sampling_params = speech.get_diff_sampling_param()
            self.task_type = "transcribe"  # type: ignore[misc,unused-ignore]
            self.asr_config = whisper.get_speech_to_text_config(speech, "transcribe")
            self.streaming_post_processor_cls = whisper.get_streaming_post_processor_cls()
            self.enable_force_include_usage = False
            self.max_audio_decode_duration_s = envs.VLLM_MAX_AUDIO_DECODE_DURATION_S
            self.max_audio_decode_bytes = envs.VLLM_MAX_AUDIO_DECODE_BYTES
            self._preprocess_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="conformance-stt")
            self._decode_and_chunk_speech_async = make_async_with_semaphore(
                self._decode_and_chunk_speech, executor=self._preprocess_executor
            )

        async def _detect_language(self, audio_chunk: Any, request_id: str) -> str:
            # Detecting the language is a run of the model (one token): the stop hears English.
            return "en"

    server = FastAPI()
    server.state.args = SimpleNamespace(log_error_stack=False)  # vLLM's handlers read it: its default
    init_exception_handler(server)
    server.include_router(embed_router)
    server.include_router(transcription_router)
    server.include_router(decisions_router)
    server.state.serving_embedding = ServingEmbedding(  # type: ignore[no-untyped-call,unused-ignore]
        _Engine(embedder),
        OpenAIModelRegistry(embedder, served),
        request_logger=None,
        chat_template_config=ChatTemplateConfig(),
    )
    server.state.openai_serving_transcription = Transcription()
    decider = _model_config(folder, False)
    server.state.openai_serving_decisions = OpenAIServingDecisions(
        OpenAIModelRegistry(decider, served), _reads(_Engine(decider)), request_logger=None
    )

    @server.exception_handler(Reached)  # type: ignore[untyped-decorator,unused-ignore]
    async def reached(request: Request, exc: Reached) -> JSONResponse:
        return JSONResponse({"reached": exc.kind, "params": repr(exc.params)}, status_code=200)

    return server
