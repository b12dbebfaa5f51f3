"""Every option that more than one command takes, declared once, and the argparse types they use.

A command module adds its own options next to its code and takes shared ones from here (``--db``,
``--json``, ``--k``, the endpoint and agent options...): one flag, one declaration, so a flag cannot
mean one thing in ``ask`` and another in ``eval run`` by accident. Where commands word a shared
option's help differently, the wording is an argument; the flag, type and default are not.

Nothing here imports anything heavy: choices that need a registry are read when first needed.
"""

from __future__ import annotations

import argparse
import sys
import types
import typing
from collections.abc import Callable, Iterable, Iterator
from typing import Any, NoReturn, TypeAlias

from videoatlas import limits
from videoatlas.agents.registry import DEFAULT_AGENT
from videoatlas.environment.timefmt import parse_time

Container: TypeAlias = argparse._ActionsContainer
"""A parser, an argument group or a mutually exclusive group: anything an option can be added to."""


class Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake in one line and exits 2."""

    def error(self, message: str) -> NoReturn:
        """Write ``message`` as one line on stderr and exit 2 (argparse's own prints the usage too)."""
        sys.stderr.write(f"{self.prog}: error: {message} (see --help)\n")
        raise SystemExit(2)


Subparsers: TypeAlias = "argparse._SubParsersAction[Parser]"
"""What ``add_subparsers(parser_class=Parser)`` returns: each command module adds its commands' parsers to it."""


class Lazy:
    """Choices read when first needed (for a check or a help page), so building the parser imports nothing."""

    def __init__(self, load: Callable[[], Iterable[str]]) -> None:
        self._load = load
        self._values: list[str] | None = None

    def _get(self) -> list[str]:
        if self._values is None:
            self._values = list(self._load())
        return self._values

    def __contains__(self, item: object) -> bool:
        return item in self._get()

    def __iter__(self) -> Iterator[str]:
        return iter(self._get())

    def __len__(self) -> int:
        return len(self._get())


def registered_agents() -> Iterable[str]:
    """The registered agents' names (imports the registry: call it through :class:`Lazy`)."""
    from videoatlas.agents.registry import agent_names

    return agent_names()


def positive_int(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def seconds(text: str) -> float:
    """An argparse type: a number of seconds, 0 or more."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def context_length(text: str) -> int | str:
    """An argparse type: a context length in tokens, or ``auto`` (the longest that fits the GPU)."""
    return "auto" if text.strip().lower() == "auto" else positive_int(text)


def port(text: str) -> int:
    """An argparse type: a TCP port, 1 to 65535."""
    value = positive_int(text)
    if value > 65535:
        raise argparse.ArgumentTypeError(f"a port is at most 65535, got {value}")
    return value


def add_video_argument(p: Container) -> None:
    """The ``VIDEO`` argument of ``probe``, ``grid`` and ``ask``."""
    p.add_argument("video", help="a video file or a concatenation manifest")


def add_run_argument(p: Container) -> None:
    """The ``RUN`` argument of the commands that take a stored run."""
    p.add_argument("run", help="run id (see: videoatlas runs)")


def add_db_option(p: Container, help: str = "database URL (env VIDEOATLAS_DB)") -> None:
    """``--db``: the database of checkpoints and traces (None: ``persistence.db`` picks, VIDEOATLAS_DB first)."""
    p.add_argument("--db", default=None, help=help)


def add_json_option(p: Container, help: str = "machine-readable output") -> None:
    """``--json``: JSON on stdout instead of lines for people."""
    p.add_argument("--json", action="store_true", help=help)


def add_quiet_option(p: Container, help: str = "no progress lines on stderr") -> None:
    """``--quiet``: no progress on stderr."""
    p.add_argument("--quiet", action="store_true", help=help)


def add_grid_options(p: Container, cell_px_limit: str = "") -> None:
    """``--k`` and ``--cell-px``: the grid's size and its cells' side (``cell_px_limit``: a further limit, worded)."""
    p.add_argument(
        "--k", type=int, default=8, help=f"grid size K (default 8: 64 cells; {limits.K_MIN} to {limits.K_MAX})"
    )
    p.add_argument(
        "--cell-px",
        type=int,
        default=320,
        help=f"pixels per cell side (default 320; {limits.CELL_PX_MIN} to {limits.CELL_PX_MAX}{cell_px_limit})",
    )


def add_subtitle_options(p: Container, help: str) -> None:
    """``--subtitles FILE`` and ``--subtitle-offset S``."""
    p.add_argument("--subtitles", metavar="FILE", help=help)
    p.add_argument("--subtitle-offset", default="0", metavar="S", help="seconds added to every subtitle time")


def subtitle_offset(text: str) -> float:
    """The seconds ``--subtitle-offset`` gives, a leading minus allowed (``-1:30``)."""
    negative = text.strip().startswith("-")
    value = parse_time(text.strip().lstrip("-"))
    return -value if negative else value


def add_output_option(p: Container, metavar: str, help: str, required: bool = True) -> None:
    """``-o``/``--output``: the one file a command writes."""
    p.add_argument("-o", "--output", required=required, default=None, metavar=metavar, help=help)


def add_out_option(p: Container, help: str, required: bool = True) -> None:
    """``--out DIR``: the folder a command writes into."""
    p.add_argument("--out", required=required, default=None, metavar="DIR", help=help)


def add_limit_option(p: Container, help: str, default: int | None = None) -> None:
    """``--limit N``: at most N items (runs, questions)."""
    p.add_argument("--limit", type=positive_int, default=default, help=help)


def add_seed_option(p: Container, default: int, help: str) -> None:
    """``--seed``: the seed of whatever the command draws at random."""
    p.add_argument("--seed", type=int, default=default, help=help)


def add_model_option(p: Container, help: str, required: bool = False) -> None:
    """``--model``: a model id (served, to serve, or to ask)."""
    p.add_argument("--model", required=required, default=None, help=help)


def add_base_url_option(p: Container, help: str) -> None:
    """``--base-url``: an OpenAI-compatible endpoint."""
    p.add_argument("--base-url", default=None, help=help)


def add_standin_option(p: Container, help: str) -> None:
    """``--standin``: answer with the stand-in VLM, started in this process."""
    p.add_argument("--standin", action="store_true", help=help)


def add_listen_options(
    p: Container, host: str, host_help: str, port_default: int, port_help: str, port_type: Callable[[str], int] = port
) -> None:
    """``--host`` and ``--port``: where a server listens."""
    p.add_argument("--host", default=host, help=host_help)
    p.add_argument("--port", type=port_type, default=port_default, help=port_help)


def add_agent_option(p: Container, help: str, metavar: str | None = None, default: str | None = DEFAULT_AGENT) -> None:
    """``--agent``: which registered agent (the registry is read only for a check or a help page)."""
    p.add_argument("--agent", choices=Lazy(registered_agents), default=default, metavar=metavar, help=help)


def add_prompts_option(p: Container, help: str, default: str | None) -> None:
    """``--prompts SET|DIR``: a prompt set, by a built-in set's name or a directory's path."""
    p.add_argument("--prompts", default=default, metavar="SET|DIR", help=help)


def add_agent_options(p: argparse.ArgumentParser, with_settings: bool = True) -> None:
    """The agent to run, the knobs every agent shares, and each agent's own settings (one group per agent).

    An agent's options are generated from its settings model: a field ``some_field`` is set by
    ``--some-field``, and the help is the field's description (one flag serves agents that share a field).
    ``with_settings=False`` leaves those out (and the settings models unimported): for a command line
    that does not run this parser.
    """
    add_agent_option(p, "which agent answers: %(choices)s (default %(default)s)")
    add_prompts_option(p, "prompt set: the agent's built-in set name or a directory", default="default")
    add_grid_options(p, ", and K x cell-px within the endpoint's image limit")
    p.add_argument("--token-budget", type=positive_int, default=None, help="stop exploring after this many tokens")
    p.add_argument("--call-budget", type=positive_int, default=None, help="stop exploring after this many model calls")
    p.add_argument(
        "--max-concurrency", type=positive_int, default=8, help="model tasks running at once at most (default 8)"
    )
    p.add_argument(
        "--thinking",
        default=None,
        metavar="on|off|ROLE=on,...",
        help="a reasoning model's thinking, for every role or per role (each agent has its own roles; an unknown "
        "one is refused with the list), sent as enable_thinking (env VIDEOATLAS_THINKING; default: "
        "nothing sent, the server's default)",
    )
    add_speech_options(p)
    if not with_settings:
        return
    from videoatlas.agents.registry import settings_model

    seen: dict[str, tuple[argparse.Action, str, str]] = {}
    for name in registered_agents():
        group = p.add_argument_group(f"{name} settings (with --agent {name})")
        for field, info in settings_model(name).model_fields.items():
            flag = "--" + field.replace("_", "-")
            summary = (info.description or field).split(". ")[0].rstrip(".").replace("`", "")  # no reST in help
            help_text = f"{summary} (default {info.default})"
            metavar = setting_metavar(info.annotation)
            if flag in seen:  # two agents with a setting of one name share its flag; its help says what each means
                action, first, first_help = seen[flag]
                if help_text == first_help and action.help is not None:  # one meaning: the help names who has it
                    head, _, also = action.help.partition(" [also with --agent ")
                    names = [*also.rstrip("]").split(", "), name] if also else [name]
                    action.help = f"{head} [also with --agent {', '.join(names)}]"
                elif help_text != first_help:
                    if not action.help or not action.help.startswith(f"{first}: "):
                        action.help = f"{first}: {first_help}"
                        action.metavar = str(action.metavar)
                    action.help += f"; {name}: {help_text}"
                    if metavar not in str(action.metavar).split("|"):
                        action.metavar = f"{action.metavar}|{metavar}"
                continue
            switch = info.annotation is bool  # a bare flag turns it on; one on by default also gets --no-NAME
            common: dict[str, Any] = {"dest": f"setting__{field}", "default": None, "metavar": metavar}
            common["help"] = help_text
            if switch:
                action = group.add_argument(flag, nargs="?", const="true", **common)
            else:
                action = group.add_argument(flag, **common)
            seen[flag] = (action, name, help_text)
            negated = "--no-" + field.replace("_", "-")
            if switch and info.default is True and negated not in seen:
                off = group.add_argument(
                    negated, dest=f"setting__{field}", action="store_const", const="false", help=f"{flag} false"
                )
                seen[negated] = (off, name, f"{flag} false")


SPEECH_MODES = ("auto", "off", "full")
"""``--speech``: the speech track's modes (``RunConfig.speech``; here so that the parser imports nothing)."""


def add_speech_options(p: Container) -> None:
    """``--speech``, ``--speech-url`` and ``--speech-model``: the speech track every agent can hear."""
    p.add_argument(
        "--speech",
        choices=SPEECH_MODES,
        default=None,
        help="the video's speech track, transcribed by the endpoint's /v1/audio/transcriptions: auto (default) "
        "transcribes the stretches the agent looks at, when the video has sound and the route answers; full "
        "transcribes the whole track at the first look; off never listens. --subtitles, when given, is used instead",
    )
    p.add_argument(
        "--speech-url",
        default=None,
        metavar="URL",
        help="the server that transcribes, when the VLM's does not (vLLM serves one model per server: a Whisper "
        "server beside the VLM's); default: the VLM's endpoint",
    )
    p.add_argument(
        "--speech-model",
        default=None,
        metavar="M",
        help="the model named in transcription requests (default: the speech server's first model, or the chat model)",
    )


def setting_metavar(annotation: Any) -> str:
    """What a setting's option takes, from its type: ``N`` (whole number), ``X`` (number), ``auto|bfs|dfs``..."""
    names: list[str] = []
    for kind in _alternatives(annotation):
        if typing.get_origin(kind) is typing.Literal:
            names.extend(str(value) for value in typing.get_args(kind))
        elif kind is bool:
            names.append("true|false")
        else:
            names.append({int: "N", float: "X"}.get(kind, "TEXT"))
    return "|".join(dict.fromkeys(names))


def _alternatives(annotation: Any) -> Iterator[Any]:
    """The types a union (or one type) allows, ``Annotated`` metadata and ``None`` left out."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        yield from _alternatives(typing.get_args(annotation)[0])
    elif origin is typing.Union or origin is types.UnionType:
        for arg in typing.get_args(annotation):
            yield from _alternatives(arg)
    elif annotation is not type(None):
        yield annotation


def add_endpoint_options(p: argparse.ArgumentParser) -> None:
    """Where the VLM is; flags override VIDEOATLAS_BASE_URL / VIDEOATLAS_MODEL / VIDEOATLAS_API_KEY."""
    add_base_url_option(p, "OpenAI-compatible endpoint (env VIDEOATLAS_BASE_URL)")
    add_model_option(p, "model id (env VIDEOATLAS_MODEL; default: first served)")
    p.add_argument("--api-key", default=None, help="API key (env VIDEOATLAS_API_KEY)")
    p.add_argument("--timeout", type=float, default=None, help="seconds per request (default 120)")
    p.add_argument(
        "--endpoint-patience",
        type=seconds,
        default=None,
        metavar="S",
        help="how long to wait for an endpoint (or database) that answered before and went away, e.g. a "
        "restarted vLLM, before stopping the runs as interrupted (resumable) (env VIDEOATLAS_ENDPOINT_PATIENCE; "
        "default 300)",
    )
    p.add_argument(
        "--no-strict-schema",
        action="store_true",
        help='send reply schemas with "strict": false, for a server that refuses strict mode '
        "(env VIDEOATLAS_STRICT_SCHEMA=0)",
    )
    add_standin_option(p, "start the STAND-IN VLM in-process and use it (OCR-based test backend, not a VLM)")
    p.add_argument(
        "--max-image-pixels",
        type=positive_int,
        default=None,
        metavar="N",
        help="pixels per image the server accepts (env VIDEOATLAS_MAX_IMAGE_PIXELS; default 12845056, "
        "Qwen2.5-VL's); K x cell-px squared must fit, checked before the run starts",
    )
    p.add_argument(
        "--max-images",
        type=positive_int,
        default=None,
        metavar="N",
        help="images per prompt the server accepts, as vLLM's --limit-mm-per-prompt (env VIDEOATLAS_MAX_IMAGES; "
        "default 16); agents keep within it",
    )
    add_reasoning_option(
        p,
        "--standin-reasoning",
        "with --standin: the stand-in replies like a reasoning model, its reasoning in a field of the "
        "reply (field) or in <think> tags before the answer (tags); default off",
    )


REASONING_MODES = ("off", "field", "tags")
"""How the stand-in imitates a reasoning model (``standin.thinking.MODES``, not imported here: it is heavy)."""


def add_reasoning_option(p: Container, flag: str, help: str) -> None:
    """The stand-in's reasoning mode (``off``, ``field``, ``tags``), on ``standin`` and on commands that start it."""
    p.add_argument(flag, choices=REASONING_MODES, default="off", help=help)


def add_logging_options(p: argparse.ArgumentParser, default: Any) -> None:
    """``--log-level`` and ``--log-json``: on the main parser and, so that either order works, on every command."""
    p.add_argument(
        "--log-level",
        default=default,
        choices=["debug", "info", "warning", "error"],
        help="log messages from this level up on stderr (default warning)",
    )
    p.add_argument("--log-json", action="store_true", default=default, help="log JSON lines to stderr")
