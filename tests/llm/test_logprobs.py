"""Reading an answer's probabilities from a reply's token log-probabilities (llm/logprobs.py), on token streams
whose numbers are chosen by hand."""

from __future__ import annotations

import math

import pytest

from videoatlas.llm.logprobs import (
    TokenLogprob,
    answer_start,
    choice_probabilities,
    flag_probability,
    option_probability,
    read_tokens,
    sequence_probability,
    settled,
    value_start,
)

pytestmark = pytest.mark.unit
L = math.log


def certain(*pieces: str) -> list[TokenLogprob]:
    return [TokenLogprob(p, 0.0, ((p, 0.0),)) for p in pieces]


def test_the_answer_index_is_read_where_its_value_starts_and_normalised_over_the_choices() -> None:
    at_answer = TokenLogprob("2", L(0.6), (("2", L(0.6)), ("0", L(0.2)), ("1", L(0.1)), ("x", L(0.05))))
    tokens = [*certain('{"', "judgements", '":', " [],", ' "', "answer", '":', " "), at_answer]
    tokens += certain(",", ' "', "reasoning", '":', ' "', "seen", '"}')
    reply = "".join(t.token for t in tokens)
    assert reply == '{"judgements": [], "answer": 2, "reasoning": "seen"}'
    assert answer_start(reply) == reply.index("2")
    # 0.6, 0.2, 0.1 over the choices (the "x" is no choice); choice D is not among the alternatives: 0.
    assert choice_probabilities(tokens, reply, 4) == pytest.approx([0.2 / 0.9, 0.1 / 0.9, 0.6 / 0.9, 0.0])
    assert choice_probabilities(tokens, reply, 2) == pytest.approx([2 / 3, 1 / 3])  # only A and B are choices


def test_a_token_that_starts_before_the_value_is_matched_on_what_it_spells_there() -> None:
    # The space and the digit in one token: alternatives count only if they spell the same space first.
    at_answer = TokenLogprob(" 1", L(0.5), ((" 1", L(0.5)), (" 0", L(0.3)), ("0", L(0.15))))
    tokens = [*certain('{"', "answer", '":'), at_answer, *certain("}")]
    reply = '{"answer": 1}'
    assert choice_probabilities(tokens, reply, 2) == pytest.approx([0.3 / 0.8, 0.5 / 0.8])


def test_thinking_before_the_reply_and_a_quoted_answer_key_are_passed_over() -> None:
    at_answer = TokenLogprob("0", L(0.9), (("0", L(0.9)), ("1", L(0.1))))
    reply_tokens = [*certain('{"', "reasoning", '":', ' "', 'the \\"answer\\": 1', '",', ' "', "answer", '":', " ")]
    tokens = [*certain("<think>", "maybe B", "</think>", "\n"), *reply_tokens, at_answer, *certain("}")]
    reply = "".join(t.token for t in [*reply_tokens, at_answer, *certain("}")])
    assert answer_start(reply) == len(reply) - 2  # the top-level key, not the one quoted inside a string
    assert choice_probabilities(tokens, reply, 2) == pytest.approx([0.9, 0.1])


def test_an_open_answer_has_its_sequence_probability() -> None:
    value = [TokenLogprob("a", L(0.9)), TokenLogprob(" red", L(0.8)), TokenLogprob(" car", L(0.5))]
    tokens = [*certain('{"', "found", '":', " true", ",", ' "', "answer", '":', ' "'), *value, *certain('"}')]
    reply = '{"found": true, "answer": "a red car"}'
    assert sequence_probability(tokens, reply) == pytest.approx(0.9 * 0.8 * 0.5)
    assert choice_probabilities(tokens, reply, 3) is None  # no index there


def test_nothing_is_read_when_the_tokens_do_not_end_with_the_reply_or_there_is_no_answer() -> None:
    tokens = certain('{"', "answer", '":', " ", "1", "}")
    assert choice_probabilities(tokens, '{"answer": 0}', 2) is None
    assert choice_probabilities(certain('{"', "x", '": 1}'), '{"x": 1}', 2) is None
    assert choice_probabilities(tokens, '{"answer": 1}', 11) is None  # two-digit indices are not read
    assert sequence_probability(tokens, '{"answer": 1}') is None  # an index is no string


def test_a_servers_logprobs_json_is_read_into_tokens() -> None:
    raw = {
        "content": [
            {
                "token": "1",
                "logprob": -0.1,
                "bytes": [49],
                "top_logprobs": [{"token": "1", "logprob": -0.1, "bytes": [49]}],
            }
        ]
    }
    assert read_tokens(raw) == (TokenLogprob("1", -0.1, (("1", -0.1),)),)
    assert read_tokens(None) == () and read_tokens({"content": None}) == ()


def test_a_boolean_fields_probability_of_true() -> None:
    at_flag = TokenLogprob("true", L(0.6), (("true", L(0.6)), ("false", L(0.3)), ("maybe", L(0.1))))
    tokens = [*certain('{"', "statuses", '": [], "', "sufficient", '": '), at_flag, *certain("}")]
    reply = '{"statuses": [], "sufficient": true}'
    assert flag_probability(tokens, reply, "sufficient") == pytest.approx(0.6 / 0.9)
    assert flag_probability(tokens, reply, "absent") is None


def test_a_nested_keys_value_is_found_by_its_path_not_by_a_key_of_the_same_name_elsewhere() -> None:
    reply = '{"thought": "the tool: skim", "tool": "x", "call": {"tool": "answer"}}'
    assert value_start(reply, ("call", "tool")) == reply.index('"answer"')
    assert value_start(reply, ("tool",)) == reply.index('"x"')
    assert value_start(reply, ("call", "absent")) is None and value_start(reply, ("tool", "call")) is None


TOOLS = ("overview", "skim", "focus", "answer")


@pytest.mark.parametrize("joined", [False, True])
def test_an_options_probability_is_read_at_the_strings_first_letters_however_the_quote_is_tokenised(
    joined: bool,
) -> None:
    reply = '{"thought": "done", "call": {"tool": "answer"}}'
    head = '{"thought": "done", "call": {"tool": '
    if joined:  # the quote and the word in one token: its alternatives spell the quote too
        top = ((' "answer', L(0.5)), (' "skim', L(0.3)), (' "foc', L(0.1)), (" {", L(0.1)))
        tokens = [*certain(head[:-1]), TokenLogprob(' "answer', L(0.5), top), *certain('"}}')]
    else:
        top = (("answer", L(0.5)), ("sk", L(0.3)), ("focus", L(0.1)), ("x", L(0.1)))
        tokens = [*certain(head + '"'), TokenLogprob("answer", L(0.5), top), *certain('"}}')]
    # answer 0.5, skim 0.3 ("sk" begins only skim), focus 0.1; the rest spells no tool: normalised over 0.9.
    assert option_probability(tokens, reply, ("call", "tool"), "answer", TOOLS) == pytest.approx(0.5 / 0.9)
    assert option_probability(tokens, reply, ("call", "tool"), "skim", TOOLS) == pytest.approx(0.3 / 0.9)
    assert option_probability(tokens, reply, ("call", "absent"), "answer", TOOLS) is None


def test_a_token_that_begins_several_options_reads_nothing() -> None:
    reply = '{"step": {"action": "answer"}}'
    top = (("a", L(0.7)), ("explore", L(0.3)))
    tokens = [*certain('{"step": {"action": "'), TokenLogprob("a", L(0.7), top), *certain('nswer"}}')]
    assert option_probability(tokens, reply, ("step", "action"), "answer", ("answer", "ask")) is None
    assert option_probability(tokens, reply, ("step", "action"), "answer", ("answer", "explore")) == pytest.approx(0.7)


@pytest.mark.parametrize(
    ("chose", "p", "threshold", "stands"),
    [(True, 0.79, 0.8, False), (True, 0.8, 0.8, True), (True, None, 0.8, True), (False, None, 0.3, False),
     (False, 0.35, 0.3, True), (False, 0.29, 0.3, False)],
)  # fmt: skip
def test_a_stop_stands_on_its_probability_against_the_threshold_or_else_on_the_models_choice(
    chose: bool, p: float | None, threshold: float, stands: bool
) -> None:
    assert settled(chose, p, threshold) is stands
