"""The loop VideoSeek and VideoARM share: a thinker picks one tool or answers; the tool runs; the thinker looks again.

``START -> think -> (tool -> think)* -> answer -> END``: the thinker's node routes itself with a
:class:`~langgraph.types.Command` (:func:`next_step`), the tool's node writes what it found and
hands back, and the final decision ends the run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any, Union

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import BaseModel, Field, JsonValue, create_model

from videoatlas.agents.relation import RELATION_FIELDS, Relation, RelationStep
from videoatlas.errors import ModelReplyError
from videoatlas.llm.images import ImagePart
from videoatlas.runtime.calls import ask, fallback
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.tracing import traced
from videoatlas.state.run import AnsweringState, AnswerOutput, QuestionInput
from videoatlas.state.schemas import text

ANSWER = "answer"
"""The final decision's node (the thinker's other way out)."""
SAID_CHARS = 1200
"""The longest thought or reason a thinker's step may give beside its call."""


class ToolLoopState(AnsweringState):
    """The keys the loop keeps for every thinker, beside the answer's: the call in hand, the question's relation."""

    planned: dict[str, Any] | None
    """The call the thinker chose this step, until the tool runs it (:func:`next_step`)."""
    relation: Relation | None
    """The time relation the thinker read from the question at its first step (None before it)."""


class ToolLoopOutput(AnswerOutput):
    """What a run of the loop returns: the shared answer keys and the question's time relation."""

    relation: Relation | None


def seconds_within(duration: float, window: tuple[float, float] | None) -> Any:
    """The type of a time a call may name: seconds within the video, or within ``window`` when one holds the step."""
    lo, hi = window if window is not None else (0.0, duration)
    bound: dict[str, JsonValue] = {"minimum": round(lo, 3), "maximum": round(hi, 3)}
    return Annotated[float, Field(json_schema_extra=bound)]


def step_model(name: str, said: str, variants: Sequence[type[BaseModel]], relation: bool) -> type[BaseModel]:
    """A thinker's step: ``said`` (why), then ``call``, one of ``variants`` told apart by their ``tool``.

    ``relation``: the step also says the question's time relation (the first step).
    """
    union = Union[tuple(variants)] if len(variants) > 1 else variants[0]  # noqa: UP007 - built at run time
    call: Any = Annotated[union, Field(discriminator="tool")] if len(variants) > 1 else union
    fields: dict[str, Any] = {said: (text(SAID_CHARS), ...), "call": (call, ...)}
    model: type[BaseModel] = create_model(name, **fields, **(RELATION_FIELDS if relation else {}))
    return model


def build_tool_loop(
    state: type[Any],
    output: type[Any],
    think: tuple[str, Callable[..., Any]],
    tool: tuple[str, Callable[..., Any]],
    answer: Callable[..., Any],
    checkpointer: BaseCheckpointSaver[Any] | None = None,
) -> Any:
    """Compile the loop over ``state``: ``think`` and ``tool`` are (node name, node), ``answer`` the final node."""
    (thinker, think_node), (tool_name, tool_node) = think, tool
    builder = StateGraph(state, input_schema=QuestionInput, output_schema=output, context_schema=AgentContext)
    builder.add_node(thinker, traced(thinker, think_node), destinations=(tool_name, ANSWER))
    builder.add_node(tool_name, traced(tool_name, tool_node))
    builder.add_node(ANSWER, traced(ANSWER, answer))
    builder.add_edge(START, thinker)
    builder.add_edge(tool_name, thinker)
    builder.add_edge(ANSWER, END)
    return builder.compile(checkpointer=checkpointer)


async def choose_tool(
    ctx: AgentContext,
    schema: type[BaseModel],
    images: Sequence[ImagePart],
    values: dict[str, Any],
    *,
    node: str,
    template: str,
    system: str,
    thinker: str,
    turn: int,
    said: str,
    instead: tuple[dict[str, Any], str],
    relation: RelationStep,
) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """Ask the thinker for its turn: the tool call, its words (the reply's ``said`` field), and the state update.

    A reply that cannot be used even after repair and a re-ask is never guessed at: ``instead`` is
    the (call, rule) the turn takes then; the rule stands as its words and the repair is recorded.
    The call is then settled against the question's time ``relation`` (:meth:`RelationStep.settle`).
    """
    try:
        reply, cost = await ask(
            ctx, schema, node, template, images, values, system=system, thinker=thinker, meta={"round": turn}
        )
    except ModelReplyError as exc:
        call, rule = instead
        cost, repair = fallback(exc, node, turn, rule)
        words = f"(no usable {template}: {rule})"
        update: dict[str, Any] = {"cost": cost, "repairs": [repair], said: words}
    else:
        value: Any = reply.value
        call, words = value.call.model_dump(), getattr(value, said)
        update = {"cost": cost, said: words, **relation.kept(value)}
    return relation.settle(call, update, node, turn), words, update


def next_step(call: dict[str, Any], update: dict[str, Any], tool: str, who: str) -> Command[Any]:
    """Where the thinker's turn goes: the answer if it chose to answer, else ``tool`` with ``call`` planned."""
    if call["tool"] == ANSWER:
        return Command(goto=ANSWER, update={**update, "planned": None, "stop_reason": f"the {who} answered"})
    return Command(goto=tool, update={**update, "planned": call})
