"""The loop VideoSeek and VideoARM share: a thinker picks one tool or answers; the tool runs; the thinker looks again.

``START -> think -> (tool -> think)* -> answer -> END``: the thinker's node runs one shared step
(:func:`think`) and routes itself with a :class:`~langgraph.types.Command`, the tool's node writes
what it found and hands back, and the final decision ends the run.

A step limit of N is N tool calls, then the answer (the papers' loops: VideoARM's Algorithm 1,
VideoSeek's 20 turns). The step's sequence (the limit, the budget, the window the relation holds it
to, the call with its fallback) is here once; each agent brings what is its own (:class:`Thinker`,
:class:`Ask`): its tools, its schema, its images, its prompt's values, and how a call is held to a
window in its own units.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Protocol, Union

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import Command
from pydantic import BaseModel, Field, JsonValue, create_model

from videoatlas.agents import decision
from videoatlas.agents.relation import RELATION_FIELDS, Anchor, Relation, RelationStep, relation_note, window
from videoatlas.environment.geometry import Interval
from videoatlas.environment.timefmt import format_ts
from videoatlas.errors import ModelReplyError
from videoatlas.llm.images import ImagePart
from videoatlas.llm.logprobs import option_probability, settled
from videoatlas.runtime.calls import ask, budget_exhausted, choices_block, emit, fallback, with_heard
from videoatlas.runtime.context import AgentContext
from videoatlas.runtime.speech import Heard
from videoatlas.runtime.tracing import traced
from videoatlas.state.run import AnsweringState, AnswerOutput, QuestionInput
from videoatlas.state.schemas import text

ANSWER = "answer"
"""The final decision's node (the thinker's other way out)."""
HELD_EVENT = "answer_held"
"""The progress event of an answer held back (below ``--confidence``): the step is asked again."""
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
    tools: Sequence[str] = (),
) -> tuple[dict[str, Any], str, dict[str, Any], float | None]:
    """Ask the thinker for its turn: the tool call, its words (the reply's ``said`` field), the state update, P(answer).

    A reply that cannot be used even after repair and a re-ask is never guessed at: ``instead`` is
    the (call, rule) the turn takes then; the rule stands as its words and the repair is recorded.
    The call is then settled against the question's time ``relation`` (:meth:`RelationStep.settle`).
    P(answer) is the server's probability that the call's ``tool`` is ``answer``, over ``tools`` (None: no
    logprobs, no usable reply, or ``answer`` not offered).
    """
    sure: float | None = None
    try:
        reply, cost = await ask(
            ctx, schema, node, template, images, values,
            system=system, thinker=thinker, meta={"round": turn}, logprobs=ANSWER in tools,
        )  # fmt: skip
    except ModelReplyError as exc:
        call, rule = instead
        cost, repair = fallback(exc, node, turn, rule)
        words = f"(no usable {template}: {rule})"
        update: dict[str, Any] = {"cost": cost, "repairs": [repair], said: words}
    else:
        value: Any = reply.value
        call, words = value.call.model_dump(), getattr(value, said)
        update = {"cost": cost, said: words, **relation.kept(value)}
        if ANSWER in tools:
            sure = option_probability(reply.tokens, reply.record.reply_text, ("call", "tool"), ANSWER, tools)
    return relation.settle(call, update, node, turn), words, update, sure


def next_step(call: dict[str, Any], update: dict[str, Any], tool: str, who: str) -> Command[Any]:
    """Where the thinker's turn goes: the answer if it chose to answer, else ``tool`` with ``call`` planned."""
    if call["tool"] == ANSWER:
        return Command(goto=ANSWER, update={**update, "planned": None, "stop_reason": f"the {who} answered"})
    return Command(goto=tool, update={**update, "planned": call})


class Taken(Protocol):
    """A tool step already taken, as the loop reads it: whether its tool saw the relation's anchor."""

    @property
    def anchor(self) -> float | None:
        """Where its tool saw the anchor, in the agent's own units (None: not asked, or not seen)."""


@dataclass(frozen=True, slots=True)
class Thinker:
    """A loop's thinker as its agent configures it: who it is, how its step is asked, where its calls go."""

    name: str
    """Its role ("controller"): its calls are made as it, and a run it ends says so ("the controller answered")."""
    node: str
    """Its node ("control"), by which its calls and repairs are recorded."""
    template: str
    """Its step's prompt ("step": ``step.user``)."""
    system: str
    """Its system prompt's template."""
    said: str
    """The reply's field its words are in ("reason"); they are written to state under the same key."""
    tool: str
    """The node that runs its calls ("act")."""
    unit: str
    """What one of its tool steps is called in a stop reason ("tool step": "10 tool steps done: answer forced")."""
    events: tuple[str, str]
    """Emitted as a step starts (with ``step``) and once its call is chosen (with ``step``, ``tool`` and its words)."""
    hold: Callable[[dict[str, Any], Interval], tuple[dict[str, Any], str]]
    """A call with its times held inside a window (by its own tools' fields), and a note on what changed."""


@dataclass(frozen=True, slots=True)
class Step:
    """One step as the loop sets it up: its number (1 first), the limit, what it owes the time relation."""

    number: int
    limit: int
    """Tool steps at most; this one may be the last."""
    relation: RelationStep
    """Whether the step asks the relation, and the window it is held to (None: the whole video)."""
    unsure: float | None = None
    """The server's P(answer) of an answer this step held back (below ``--confidence``): the step is asked
    again with answering not on offer (None: a first ask)."""

    def offered(self, tools: Sequence[str]) -> tuple[str, ...]:
        """``tools`` as this step offers them: without the answer when it is asked again after one held back."""
        return tuple(t for t in tools if not (t == ANSWER and self.unsure is not None))


@dataclass(frozen=True, slots=True)
class Ask:
    """One step's request to the thinker, as its agent builds it for that step."""

    schema: type[BaseModel]
    images: Sequence[ImagePart]
    values: dict[str, Any]
    """Its own template values; the shared ones are added (question, choices, duration, seconds, relation)."""
    instead: tuple[dict[str, Any], str]
    """The (call, rule) the step takes when no usable reply comes (:func:`choose_tool`); never the answer when the
    step is asked again after an answer held back."""
    tools: Sequence[str]
    """The tools the schema offers (``answer`` among them unless the step is asked again)."""
    heard: Heard | None = None
    """What hearing for the prompt cost and the lines it left (None: the step heard nothing)."""


def stop(why: str) -> Command[Any]:
    """Straight to the answer, with ``why`` as the run's stop reason."""
    return Command(goto=ANSWER, update={"stop_reason": why})


def forced(limit: int, unit: str) -> str:
    """The stop reason at the step limit: ``3 tool steps done: answer forced``."""
    return f"{limit} {unit if limit == 1 else unit + 's'} done: answer forced"


async def think(
    thinker: Thinker,
    state: ToolLoopState,
    ctx: AgentContext,
    *,
    taken: Sequence[Taken],
    anchor: Anchor | None,
    limit: int,
    window_s: float,
    confidence: float,
    ask_for: Callable[[Step], Awaitable[Ask]],
) -> Command[Any]:
    """The thinker's step: its next tool call, or the answer once ``limit`` tool steps are ``taken`` or the budget is.

    ``anchor``: where the relation's anchor was first seen (None: not yet); the step right after a tool
    saw it is held to the window of ``window_s`` seconds the relation names beside it. ``ask_for``
    builds the step's request (:class:`Ask`) only when the step asks.

    Whether to answer is held to the server's P(answer) at the call's ``tool`` against ``confidence``
    (:func:`~videoatlas.llm.logprobs.settled`): an answer below it is held back and the step is asked once
    more without answering on offer; a tool call whose P(answer) reaches it (a threshold under 0.5) answers.
    """
    if len(taken) >= limit:
        return stop(forced(limit, thinker.unit))
    spent = budget_exhausted(state["cost"], ctx.config.call_budget, ctx.config.token_budget)
    if spent:
        return stop(spent)
    number, duration, relation = len(taken) + 1, ctx.atlas.duration, state.get("relation")
    beside = window(relation, anchor, duration, window_s) if anchor is not None else None
    held = beside if beside is not None and taken[-1].anchor is not None else None
    step = Step(number, limit, RelationStep(asked=relation is None, held=held, hold=thinker.hold))
    shared = {
        "question": state["question"],
        "choices": choices_block(state["choices"]),
        "duration": format_ts(duration, 0),
        "seconds": f"{duration:.1f}",
        "relation": relation_note(ctx.prompts, relation, anchor, beside),
    }
    emit(thinker.events[0], step=number)
    call, words, update, sure = await _turn(thinker, ctx, step, shared, ask_for)
    chose = call["tool"] == ANSWER
    if chose and not settled(chose, sure, confidence):
        emit(HELD_EVENT, step=number, p_answer=sure, threshold=confidence)
        step = replace(step, unsure=sure)
        note = ctx.prompts.note("answer_held.note", p=f"{sure:.2f}", threshold=f"{confidence:g}")
        noted = {**shared, "relation": "\n".join(filter(None, [shared["relation"], note]))}
        call, words, again, _ = await _turn(thinker, ctx, step, noted, ask_for)
        repairs = [*update.get("repairs", []), *again.get("repairs", [])]
        update = {**update, **again, "cost": update["cost"] + again["cost"], "repairs": repairs}
    emit(thinker.events[1], step=number, tool=call["tool"], **{thinker.said: words})
    if not chose and settled(chose, sure, confidence):
        why = f"the {thinker.name} answered: P(answer) {sure:.2f} reached --confidence {confidence:g}"
        return Command(goto=ANSWER, update={**update, "planned": None, "stop_reason": why})
    return next_step(call, update, thinker.tool, thinker.name)


async def _turn(
    thinker: Thinker,
    ctx: AgentContext,
    step: Step,
    shared: dict[str, Any],
    ask_for: Callable[[Step], Awaitable[Ask]],
) -> tuple[dict[str, Any], str, dict[str, Any], float | None]:
    """One ask of the thinker at ``step``: the request its agent builds, with the values every thinker shares."""
    request = await ask_for(step)
    call, words, update, sure = await choose_tool(
        ctx,
        request.schema,
        request.images,
        {**shared, **request.values},
        node=thinker.node,
        template=thinker.template,
        system=thinker.system,
        thinker=thinker.name,
        turn=step.number,
        said=thinker.said,
        instead=request.instead,
        relation=step.relation,
        tools=request.tools,
    )
    if request.heard is not None:
        update = with_heard(update, request.heard)
    return call, words, update, sure


def describe_event(event: dict[str, Any]) -> str | None:
    """The progress line of an answer held back, else the final decision's (None for any other event)."""
    if event.get("event") == HELD_EVENT:
        p, threshold = event.get("p_answer"), event.get("threshold")
        return f"step {event.get('step')}: answer held back (P(answer) {p:.2f} below {threshold:g}); asking again"
    return decision.describe_event(event)
