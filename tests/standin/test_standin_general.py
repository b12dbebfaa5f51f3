"""The stand-in's rules name nothing of our synthetic videos or of our prompts.

The stand-in (``standin/``) must stay a general perceiver: whatever it knows of a request comes
from the request. These checks read its source and fail when it holds a word our synthetic
generators draw on screen or write into questions, an upper-case token of our prompt templates,
or any four-word phrase of the prompt text our agents send.
"""

from __future__ import annotations

import ast
import hashlib
import re
from pathlib import Path

import pytest

import videoatlas
from videoatlas.agents.registry import all_agents
from videoatlas.state.schemas import registered_schemas
from videoatlas.synth import KITS, STYLES, SynthSpec
from videoatlas.synth import broadcast as synth_broadcast
from videoatlas.synth import long_talk as synth_long_talk
from videoatlas.synth import signage as synth_signage
from videoatlas.synth import speech as synth_speech
from videoatlas.synth.spec import Timeline
from videoatlas_standin.language import FUNCTION_WORDS
from videoatlas_standin.version import BEHAVIOUR_VERSION, STANDIN_MODEL

pytestmark = pytest.mark.unit

PACKAGE = Path(videoatlas.__file__).parent
SIM = PACKAGE / "standin"
# Words any request may use to say what it asks ("how often", "in total", "which comes first", "count
# the ...", "which word", "the whole video") or what an action does ("go back"): the stand-in must
# understand them in anyone's question, so they cannot mark a rule fitted to ours.
# A question about speech says so with a verb of saying ("what does she say"), in anyone's question.
GENERAL = {"word", "words", "how", "often", "many", "count", "number", "total", "whole", "comes", "name", "back"}
GENERAL |= {"say", "says", "said"}
# The transcription protocol's own values: timestamp granularities are "word" or "segment" (OpenAI's API, vLLM's).
GENERAL |= {"segment"}
# How anyone asks for a count ("how many separate appearances"), says something is said ("what does the
# announcer announce"), or says what an action does ("keep it for later").
GENERAL |= {"separate", "appearances", "announce", "announced", "announces", "keep"}
# vLLM's own refusal texts, which the stand-in repeats word for word ("Please reduce the length of ...").
GENERAL |= {"please"}


def _literals(path: Path) -> list[str]:
    """The string constants of a module, docstrings excepted: where a rule would spell out a word."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    # A string standing alone as a statement documents (module, class, function or attribute docstrings).
    docs = {
        id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    return [
        node.value
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
    ]


def _sim_words() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted(SIM.glob("*.py")):
        for literal in _literals(path):
            if re.fullmatch(r"[a-z]+(?:_[a-z]+)+", literal):
                continue  # a key of a JSON body the server writes (usage, stats); the next test checks these
            for word in re.findall(r"[A-Za-z]+", literal):
                found.setdefault(word.lower(), set()).add(path.name)
    return found


def test_no_field_of_our_schemas() -> None:
    """Every agent's reply schemas' field names (``explore_cells``...) appear nowhere in the stand-in's rules."""
    all_agents()  # importing each agent registers its reply schemas
    fields: set[str] = set()
    for _, model in registered_schemas():
        fields |= set(re.findall(r"'([a-z]+(?:_[a-z]+)+)'", str(model.model_json_schema())))
    assert {"search_task", "explore_cells", "other_anchor", "search_queries", "num_frames"} <= fields
    literals = {p.name: _literals(p) for p in sorted(SIM.glob("*.py"))}
    hits = {f: n for f in fields for n, lits in literals.items() if any(f in lit for lit in lits)}
    assert not hits, f"the stand-in names fields of our schemas: {hits}"


PIL_MODES = {"RGB", "RGBA"}
"""Pillow's image modes: strings of the drawing code that are never drawn."""
SHORTEST = {"broadcast": synth_broadcast.MIN_DURATION, "signage": synth_signage.MIN_DURATION}
"""The shortest video a style plans (a shorter spec is refused)."""


def _plan(spec: SynthSpec) -> tuple[Timeline, list[str]]:
    """A style's timeline (no pixels) and its narration lines, planned by the style's own kit."""
    kit = KITS[spec.style]
    plan = kit.plan(spec)
    return kit.timeline(plan), [line.text for line in kit.speech(plan)]


def _words(texts: list[str]) -> set[str]:
    return {w.lower() for text in texts for w in re.findall(r"[A-Za-z]{3,}", text)}


def _generated_vocabulary() -> tuple[set[str], set[str]]:
    """Words the generators draw on screen or give as choices, and the words of their questions and narration."""
    shown: set[str] = set()
    said: set[str] = set()
    for style in STYLES:
        for seed in range(1, 9):
            for duration in (60.0, 600.0, 3600.0):
                if duration < SHORTEST.get(style, 0.0):
                    continue
                timeline, lines = _plan(SynthSpec(duration=duration, seed=seed, style=style))
                shown |= _words([e.text for e in timeline.events] + [c.title for c in timeline.chapters])
                shown |= _words([c for q in timeline.questions for c in q.choices])
                said |= _words([q.question for q in timeline.questions] + lines)
    talks = [synth_long_talk.long_talk(duration, seed) for duration in (600.0, 3600.0) for seed in range(1, 5)]
    for cards, questions, spoken in (
        (synth_speech.CARDS, synth_speech.QUESTIONS, synth_speech.LINES),
        (synth_speech.HELD_OUT_CARDS, synth_speech.HELD_OUT, synth_speech.HELD_OUT_LINES),
        *((talk.cards, talk.questions, talk.lines) for talk in talks),
    ):
        shown |= _words([c.title for c in cards] + [c.body for c in cards])
        shown |= _words([c for q in questions for c in q.choices])
        said |= _words([q.question for q in questions] + [line.text for line in spoken])
    # What the drawing code writes on screen besides the planned text (headers such as a card's kind).
    for path in sorted((PACKAGE / "synth").glob("*.py")):
        drawn = [literal for literal in _literals(path) if literal not in PIL_MODES]
        shown |= {w.lower() for literal in drawn for w in re.findall(r"\b[A-Z]{3,}\b", literal)}
    return shown, said


def test_no_word_of_the_synthetic_videos_or_their_questions() -> None:
    shown, said = _generated_vocabulary()
    assert len(shown) > 50 and len(said) > 50  # the generators were read
    # What our videos show is never a general word: not even the stand-in's own function words may hold it.
    assert not shown & (FUNCTION_WORDS | GENERAL), shown & (FUNCTION_WORDS | GENERAL)
    sim = _sim_words()
    hits = {w: sorted(sim[w]) for w in (shown | (said - FUNCTION_WORDS - GENERAL)) & set(sim)}
    assert not hits, f"the stand-in names words of our synthetic videos: {hits}"


def _prompt_texts() -> list[str]:
    """Every agent's prompt templates (and the shared ones), and every string agents' code puts into prompts."""
    texts = [p.read_text(encoding="utf-8") for p in sorted(PACKAGE.glob("**/prompts/*/*.txt"))]
    code = [*sorted((PACKAGE / "agents").glob("**/*.py")), PACKAGE / "runtime" / "calls.py"]
    for path in code:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value.split()) >= 4:
                texts.append(node.value)
    return texts


def test_no_phrase_or_token_of_our_prompts() -> None:
    texts = _prompt_texts()
    source = {p.name: "\n".join(_literals(p)) for p in sorted(SIM.glob("*.py"))}
    flat = {name: " ".join(re.findall(r"[a-z0-9]+", text.lower())) for name, text in source.items()}
    phrases: set[str] = set()
    tokens: set[str] = set()
    for text in texts:
        words = re.findall(r"[a-z0-9]+", re.sub(r"\$\{\w+\}", " ", text.lower()))
        phrases |= {" ".join(words[i : i + 4]) for i in range(len(words) - 3)}
        tokens |= set(re.findall(r"\b[A-Z][A-Z_]{3,}\b", text)) | set(re.findall(r"\$\{(\w+)\}", text))
    assert len(phrases) > 200 and {"ADD_TO_SCRATCHPAD", "question"} <= tokens  # the prompts were read
    phrase_hits = {p: n for p in phrases for n, f in flat.items() if f" {p} " in f" {f} "}
    assert not phrase_hits, f"the stand-in quotes our prompts: {phrase_hits}"
    tokens.discard("JSON")  # the name of the wire format, which the server's protocol errors must use
    token_hits = {t: n for t in tokens if t.isupper() for n, text in source.items() if re.search(rf"\b{t}\b", text)}
    assert not token_hits, f"the stand-in names tokens of our prompts: {token_hits}"


# The stand-in's sources as of each behaviour version. Any change to them must bump
# BEHAVIOUR_VERSION (its model id) and record the new hash here, so eval results measured with
# other rules are never re-used as if they were measured with these.
SOURCES_BY_VERSION = {
    6: "dce753a7be6325811685fb6056a54d8a7c2a7274a48722e95178d47de20cbf8d",
    7: "5e05b2f7772f4aa18fb098b777c3a0a1ca6bde9de4d33166015a444a0d0da916",
    8: "3bacdf878586e81e716ba6be804d13428b33fc38cc094fd57874abbebf955ec6",
    9: "cc831dd1df6adbccaae8f11453a3fb43229b7c73f715b5257d44119e13692b7f",
    10: "7cd139b96d16f1bffb7766b4c532bc973132d386d0b33bbd6a83fa8e42e94975",
    # 11: records embeddings and transcription requests (--record) and follows vLLM 0.33's refusals and reply
    # shapes on those two routes (make conformance compares them); an array of one object per choice names
    # each choice in its own item (an enum of integers holds indices). No rule of perception changed.
    11: "d4079c926d45d849328baf10903847120042339f00bf61ebdf88d7908ce8bbbc",
    # 12: readings kept on disk by the decoded pixels' hash (ocr_cache.py) and one reader per process shared by
    # its servers. What it answers did not change: a reading from the cache equals a fresh one (test_ocr_cache.py).
    12: "3f2bb242646ca5e39429a85eab35361f1941b7d02c0679dda1b15e5ab80d5431",
    # 13: decides like a model (issue 41): label and value pairs read in pictures (labels.py) fill fields and tool
    # arguments matched by multilingual-e5-small (meaning.py), typed by the schema, empty when nothing labels them;
    # tools ranked by what they can fill and by e5 fit; another sense (listening) before ending without evidence;
    # pictures by position, words as arrays of objects, choices replied by number.
    13: "3a7973f8ef4b8fd23129a3e434abd7b6a522b9f8b344ebf0d3297f82927fd4a0",
    # 14: open questions answered with the value asked for (a count, the words read beside what the question
    # names, a time; a description only when asked for); an enum no picture fills takes the member the question
    # states word for word (the longest); "times" is a function word; words joined by | in a JSON example are an enum;
    # a heading naming the options with none listed under it means no choices (a numbered list of steps is not them).
    14: "20aeec67cb24b7e84b4987446fc5b1e30b7918ded7c9de51b75291e90e706f2f",
    # 15: another span before ending without evidence (a function that takes a stretch of video is sent to one no
    # call covered, by its calls' arguments and its results' times, when the length is known: spans.py); label and
    # value pairs a tool result writes fill fields; a value in letters on its label's line fills the field whose
    # meaning fits the label; a field for a reference point gets the phrase the question's relation governs
    # (relations.py).
    15: "c3700e56eb0ac9b9a1070a7b26893f79cd657528bd01461275c918b1fc367eb5",
    # 16: another span among a reply schema's choice of actions (a variant that takes a stretch, by two times or an
    # array of ranges, is sent to one no look the text reports covered, while nothing relevant was found and steps
    # remain; another sense first; looks are ranges on lines naming a variant as used and the variant's values in
    # earlier replies' JSON; function tools that take an array of ranges too): spans.span_field / placed / next_look /
    # looks_written / tag_of, actions.Actions.another_stretch. Recorded again after filler.py's schema facts moved to
    # fields.py (typed_value, fit_text, is_action_enum and the field-word sets; no behaviour changed).
    16: "9d250373fda2d2eb06caf1f3a1d3d9c875ee5d5383e1ebf3cd3e14eecac3ef7c",
    # 17: the next stretch is wide enough that the steps the request says are left cover what is not looked at yet
    # (spans.next_look with language.steps_left), not only as wide as the last look. Recorded again after
    # spans._seen became the one place that clips and merges the looks, and after the docstrings that still said
    # "as wide as the last look" said the steps left too (no behaviour changed).
    17: "202132a203296ff5c135df18bb108070c4a34e422649dc1981403b703e2346af",
    # 18: what a line says was searched for (a quoted query, the object of "looking for") is left out of what the
    # line reports (language.unsought in policy.Request.written_lines): an agent's history that repeats its query
    # beside the stretch it ran on no longer reads as a sighting there (one empty look settled an open question);
    # a count without choices is settled, like one with choices, only once the text says the whole video was
    # searched (answers.Answers.sufficient / searched_all).
    18: "ba2ee692ab8d1d0b6108f0460384160256feddee69ba59bfa3f194752bd421a5",
    # 19: an enum of numbers whose field is named as an amount (fields.AMOUNT: num_..., ..._size) takes its largest
    # member for a question that needs all of the video seen (a count, an order), its first otherwise
    # (filler.Filler.enum, answers.Answers.wide); before, every such enum took its first member. A whole float
    # member is written as the grammar writes it (8.0 as 8: fields.as_written); before, the reply was refused.
    # A tile label found as two pieces is joined (perception._joined_labels); a line listing timed reports is that
    # many reports, a span counted from something placing none (language.timed_reports in policy._read_lines).
    19: "623143fb44338b8a62820462cc682c13783b8e1eff0b2f9fa522e22ef46ea199",
    # 20: a word run into a number ("GATE27") is also read as its two parts (language.read_words, word_parts):
    # a short word the question names is seen there, and the value read is the number alone. An object with one
    # field per numbered item (segment_12, items.keyed_items) judges each on the frames inside the stretch the
    # text lists for it (items.listed_spans, answers.Answers.tile_within); before, every field got the same text
    # and the lowest score. An integer score with bounds takes the confidence on its scale (filler.integer).
    # An open value with no picture giving it is the word a note writes right after what the question names
    # (answers.written_value). For which comes first (last), a plan from text looks before (after) the earliest
    # (latest) choice reported first (actions.Actions._beyond_ordered).
    20: "60efe0f92dd47be2ce2291f3ace1c523ee4e662049f38240dc36ae6b7ba570d7",
    # 21: a look that states how many frames it took over a stretch, frames more than 2.5 s apart, only glimpsed
    # it: once every part was looked at and nothing found, a look goes back over what was only glimpsed, in turn
    # from the start, with the most frames it takes, 2.5 s apart or as close as the steps left allow
    # (spans.glimpses, spans.denser_look). For "right after (before) X", a choice seen
    # where X was not bears on nothing (actions.Actions.found_nothing). Pictures that continue one another as
    # pages of one sheet are walked through in time order, from one page to the next (sheets.sheet_cells).
    21: "b25ad5da0f3a28124701dafcd15ddb4f849697028f1abc87b36f5f2364170323",
    # 22: a label on a small black plate is read apart from the picture's own text beside or under it
    # (boxes.find_plates / text_boxes; before, a frame's id and time burned in over a heading were read with it
    # as one line, and the frame had neither); frames sent one picture each are pages of one sheet, their step
    # the one between them (sheets.sheet_cells), and a tile's neighbours in time (its span, the run it is part of
    # when counting) are found on its sheet, not its picture alone (policy.Request.cells_of); a search task the
    # stand-in writes starts with the question it serves (filler.Filler.string), so a tool that is sent only the
    # task still knows what is placed in time.
    22: "b792a1b3cae6ed19c15d1f81f9f379b25a16777f1cf88d554cdae70d111375d4",
    # 23: a question that needs all of the video seen (a count, which comes first or last) is not settled by one
    # sighting: while it is unsettled and steps remain, a look goes on to the next stretch nobody covered
    # (actions.Actions.search_on, in another_stretch and tools.ToolFiller.another_span), as it did before only
    # when the looks so far had found nothing. A frame labelled to whole seconds speaks for a listed stretch
    # that ends (or starts) within a second of its label (answers.Answers.tile_within; before, 0.05 s, so a
    # stretch ending at 60.9 s had no frame of its own at the label 01:01 and was judged on the whole picture).
    23: "d06205c3528eae142885d382dd672d11d6f00c3d131216745912e8ee76c6b678",
    # 24: an enum the question states no member of word for word, when the question places its answer on one side
    # of something (policy.Request.direction), takes the one member that says that side, asking for a length of
    # time exactly when the question does (relations.member_saying in filler.Filler.enum): "straight after the
    # sign" fills a relation enum with "right after", "right before the banner" with "just before"; before, both
    # took the first member ("none"). A list of frame ids a field asks for a time relation's reference point with
    # (relations.reference_field: ``anchor``, ``landmark_frames``) holds only the frames that show a word the
    # question names that point by (actions.Actions.reference_cells); before, it held the most relevant frames, so a
    # choice seen without the anchor was reported as the anchor.
    24: "8f376aa5febbb7b2ff3740c175d299798ed061bad70c96fd85d79d50c4c1454d",
    # 25: for "right after (before) X" with X in view, no choice in evidence and no frame shown within
    # policy.IMMEDIATE_S after (before) it, a choice of actions takes a closer look (else a survey) at that stretch
    # before it stops (actions.Actions.anchor_reach in choose_action); before, X in view counted as something
    # found, and with no way to open or flag it the reply answered on nothing. A string field named ``question``
    # (a sub-question a tool is asked) is a task (fields.TASK) and starts with the question; before, it was empty.
    25: "46e7154afa0fc41ed2787b3e544327904658defc008199e02031ee1a039ec58f",
    # 26: an enum of integers the text lists as numbered items with a score each ("stretch 7: ..., score 0.82") is a
    # choice among them, and with nothing in view that bears on the question the best-scored is taken
    # (items.listed_scores, actions.Actions.ranked_ids in filler.Filler.id_value); before, the first listed.
    26: "e183125aec545c7faa1b6e4a4498d039adc88ae90e0c406dac6cca5176dd97eb",
    # 27: moments seen in pictures, the later within policy.IMMEDIATE_S of the earlier, are one appearance of a counted
    # thing when the request's timed frames also show where it is absent and none of those lies between them
    # (stays.stays, from answers.Answers.appearances); before, frames shown apart from a grid were one appearance
    # only when under policy.SAME_SPAN_S apart, so a memory of letter-labelled frames of one stay counted each.
    27: "9b0fd671efeaba7ae158bc5ec518c748c441405fbf72ad17062f908a3e2be725",
    # 28: for a question about what is said, a line of the text labelled with the ids of grid cells the picture shows
    # ("cell 4: ...", "cells 4 to 6: ...") is part of what the stand-in knows of those cells (said.said_by_cell, read
    # in policy.Request._seen), so a cell whose line says a choice is evidence, filed with what was said there
    # (answers.Answers.describe); before, a cell was judged by its pixels alone. And a line of typed text is a list of
    # options only when two choices stand in it as words of their own (policy.Request.written_lines): "cell 40, room
    # 400" run together reads "140" and "400", which had hidden the line (a report of what was filed) from the reader.
    # And for "how many", a label and value pair answers only when its value holds a number (answers.asked_pair): the
    # words printed under a counted badge (a subtitle under an evidence tile) were its open count's answer.
    28: "082ef63395a45a485aec224cc196d1935255dd8d530d287b362827242dc7be8a",
    # 29: $VIDEOATLAS_STANDIN_THREADS sets the threads of the text reader and the speech model (a test suite's
    # workers read a third faster with one each on two cores). No rule changed: the readings are the same.
    29: "5181574323cf876efdcd68f99641e3c25f386a0a65ebd7093ceefe579340c73e",
    # 30: an enum whose members the text describes one sentence each takes the member whose sentence fits the
    # question's reach, many moments or one place (described.member_by_reach in filler.Filler.enum); before, a
    # rule for the member names bfs/dfs alone. Words of the synthetic videos the vocabulary test had not read
    # (signage, the long talk) left the stand-in: "exit" (language.INTENTS), "clock" (spans._TIMELY), "level"
    # (meaning._BACKGROUND), "ends" (a refusal text of contract.py).
    30: "33265c8edf9aa1deb20db445fdae461484fe446c11001e10a488111b9d65a139",
    # 31: a list of evidence labels cites each label once, and nothing when the question has choices and none is
    # backed by what was seen (answers.Answers.cited_labels); before, such a guess cited whatever showed the
    # question's subject (a chapter's title without any code), so the run counted as grounded.
    31: "691ddc977f36e06c666c947a8e3bc00157fdcefc855e58a1c2e3c227df0e6c01",
    # 32: a union of actions with none that opens or flags, about to answer unsettled while the question's subject
    # is in view with nothing asked of it, sends a look that takes a stretch and a frame count to the subject's
    # stretch, when its most frames see it 1.5 times closer than the frames in view (closer.Closer.subject_look);
    # before, such a request answered (a guess) as soon as a survey showed a chapter's title and no code. A
    # sentence on what the images show names the tiles showing the subject as related when none stands out in
    # its image (answers.Answers.overview); before, "nothing related" while the subject filled the picture.
    # A line is a list of options only when two choices stand in it as words in a row (policy.written_lines).
    32: "e13e76403f78e65d3a84cfb3a50ca87c31752eedd91a3a7a4b28fc672170cce0",
}


def _sources_sha() -> str:
    digest = hashlib.sha256()
    for path in sorted(SIM.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_text(encoding="utf-8").replace("\r\n", "\n").encode())
    return digest.hexdigest()


def test_behaviour_version_follows_the_rules() -> None:
    assert STANDIN_MODEL.endswith(f"-v{BEHAVIOUR_VERSION}")
    assert SOURCES_BY_VERSION.get(BEHAVIOUR_VERSION) == _sources_sha(), (
        "standin/ changed: bump BEHAVIOUR_VERSION and record the new sources hash"
    )
