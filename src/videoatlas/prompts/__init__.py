"""Prompt templates: text files with ``${name}`` placeholders, filled strictly (unknown or missing: error)."""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from pathlib import Path

from videoatlas.errors import BadInputError

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")

IMAGES = "images"
"""The placeholder a user template may hold once, on a line of its own: where the call's images go.

The text above it is sent before the images, the rest after them. A template without it sends its
images first. What every call of a run repeats belongs above the images, what changes below them:
a server's prefix cache then reuses the longest shared start (docs/agents.md, "Prompt sets")."""
_IMAGES_LINE = re.compile(r"(?:^|\n)\$\{" + IMAGES + r"\}(?:\n|$)")
_IMAGES_MARK = "\x1eimages\x1e"
"""What ``${images}`` is filled with while a call's text is split (no value holds this control character)."""


@dataclass(frozen=True, slots=True)
class Template:
    """One prompt template: its name, text, the variables it uses, and a hash of its text."""

    name: str
    text: str

    @property
    def variables(self) -> frozenset[str]:
        """Placeholders the text uses."""
        return frozenset(_PLACEHOLDER.findall(self.text))

    @property
    def sha256(self) -> str:
        """Hash of the text, recorded on every call that used it."""
        return hashlib.sha256(self.text.encode()).hexdigest()[:16]

    def render(self, **values: object) -> str:
        """Fill every placeholder; a missing or an unexpected value is an error."""
        missing = self.variables - values.keys()
        extra = values.keys() - self.variables
        if missing or extra:
            raise BadInputError(
                f"template {self.name}: missing {sorted(missing) or 'nothing'}, unexpected {sorted(extra) or 'nothing'}"
            )
        return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})


TemplateSpec = dict[str, tuple[frozenset[str], frozenset[str]]]
"""Template name -> (variables that must appear, variables that may appear)."""

SHARED_PACKAGE = "videoatlas.prompts"
SHARED_SPEC: TemplateSpec = {
    "reask": (frozenset({"error"}), frozenset()),
    # The reply format every agent's final decision asks for (runtime/calls.py: decision_values), by question kind.
    "format_choices.note": (frozenset(), frozenset()),
    "format_open.note": (frozenset(), frozenset()),
    # The question a text-only final decision asks of /v1/decisions, where the server serves it (agents/decision.py).
    "decision_question.note": (frozenset({"question"}), frozenset()),
    # A tool-loop step asked again after the answer it chose fell below --confidence (agents/tool_loop.py).
    "answer_held.note": (frozenset({"p", "threshold"}), frozenset()),
    # What every agent's final decision is told of the question's time relation (agents/relation.py).
    "relation_none.note": (frozenset(), frozenset()),
    "relation_order.note": (frozenset({"kind"}), frozenset()),
    "relation_between.note": (frozenset({"anchor", "other"}), frozenset()),
    "relation_between_open.note": (frozenset({"anchor"}), frozenset()),
    "relation_side.note": (frozenset({"kind", "anchor"}), frozenset({"side"})),
    "anchor_unseen.note": (frozenset(), frozenset()),
    "anchor_seen.note": (frozenset({"time"}), frozenset({"seconds"})),
    "anchor_cited.note": (frozenset({"label", "time"}), frozenset({"seconds"})),
}
"""Templates every prompt set has: a set that lacks one takes the shared copy (``prompts/shared/``)."""


def builtin_template(name: str, package: str = SHARED_PACKAGE, prompt_set: str = "shared") -> Template:
    """A template shipped with the package, e.g. ``builtin_template("reask")``."""
    path = resources.files(package).joinpath(prompt_set, f"{name}.txt")
    if not path.is_file():
        raise BadInputError(f"no template {name!r} in the built-in prompt set {prompt_set!r}")
    return Template(f"{prompt_set}/{name}", path.read_text(encoding="utf-8"))


# -- prompt sets -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CallText:
    """What one model call says, from a prompt set: its system text, its user text, and their labels."""

    system: str
    user: str
    """The user text that follows the images."""
    labels: dict[str, str]
    """The prompt set's name and hash and the user template's name and hash (kept on the call's record)."""
    head: str = ""
    """The user text that goes before the images (the template's text above ``${images}``; empty without one)."""


@dataclass(frozen=True, slots=True)
class PromptSet:
    """A named directory of templates, checked when loaded, with a hash recorded on every result."""

    name: str
    source: str
    templates: dict[str, Template]

    @property
    def sha256(self) -> str:
        """Hash over every template's name and text."""
        digest = hashlib.sha256()
        for key in sorted(self.templates):
            digest.update(key.encode() + b"\0" + self.templates[key].text.encode() + b"\0")
        return digest.hexdigest()[:16]

    def __getitem__(self, name: str) -> Template:
        return self.templates[name]

    def call(self, system: str, template: str, values: Mapping[str, object], **system_values: object) -> CallText:
        """The texts of one model call, and the labels its record keeps of them.

        The system template ``system`` filled with ``system_values``, the user template ``<template>.user``
        with ``values`` (as :meth:`render` fills them), split where it places the images (:data:`IMAGES`).
        """
        user = f"{template}.user"
        labels = {"prompt_set": self.name, "prompt_set_sha": self.sha256, "template": f"{template}:{self[user].sha256}"}
        head, _, rest = self.render(user, **values, **{IMAGES: _IMAGES_MARK}).rpartition(_IMAGES_MARK)
        return CallText(self.render(system, **system_values), rest.removeprefix("\n"), labels, head)

    def note(self, name: str, **values: object) -> str:
        """A note template filled as :meth:`render` fills it, without its closing newline (it goes inside a line)."""
        return self.render(name, **values).rstrip("\n")

    def render(self, name: str, **values: object) -> str:
        """Fill template ``name`` with the values it uses; values it does not use are ignored.

        Nodes offer every variable the spec allows; a template decides which to show. What the
        spec does not allow was already refused when the set was loaded.
        """
        template = self.templates[name]
        return template.render(**{k: v for k, v in values.items() if k in template.variables})


def load_prompt_set(
    name_or_path: str, spec: TemplateSpec, builtin: Traversable, defaulted: frozenset[str] = frozenset()
) -> PromptSet:
    """Load an agent's built-in set by name, or a directory by path, checking every template's variables.

    ``spec`` is the agent's template spec and ``builtin`` the folder whose sub-folders are its built-in
    sets (``default`` and any other). Templates of :data:`SHARED_SPEC` a set does not hold are the
    shared ones; templates named in ``defaulted`` (ones an agent added after sets were written for
    it, used only by an optional mode) that a set does not hold are the ``default`` set's.
    """
    candidate = Path(name_or_path).expanduser()
    check_prompt_source(name_or_path, builtin)
    if candidate.is_dir():
        files = {p.stem: p.read_text(encoding="utf-8") for p in candidate.glob("*.txt")}
        source, name = prompt_source(name_or_path), candidate.name
    else:
        root = builtin.joinpath(name_or_path)
        files = {
            entry.name[: -len(".txt")]: entry.read_text(encoding="utf-8")
            for entry in root.iterdir()
            if entry.name.endswith(".txt")
        }
        source, name = f"builtin:{name_or_path}", name_or_path
    for shared in SHARED_SPEC:
        files.setdefault(shared, builtin_template(shared).text)
    for name_missing in sorted(defaulted - set(files)):
        files[name_missing] = builtin.joinpath("default", f"{name_missing}.txt").read_text(encoding="utf-8")
    problems = []
    templates: dict[str, Template] = {}
    full_spec = {**spec, **SHARED_SPEC}
    for key, (required, optional) in full_spec.items():
        if key not in files:
            problems.append(f"{key}.txt is missing")
            continue
        template = Template(f"{name}/{key}", files[key])
        if key.endswith(".user"):
            optional = optional | {IMAGES}
            problems.extend(_images_line_problems(key, template.text))
        unknown = template.variables - required - optional
        absent = required - template.variables
        if unknown:
            problems.append(f"{key}.txt uses unknown variable(s) {', '.join(sorted(unknown))}")
        if absent:
            problems.append(f"{key}.txt lacks required variable(s) {', '.join(sorted(absent))}")
        templates[key] = template
    extra = set(files) - set(full_spec)
    if extra:
        problems.append(f"unexpected template(s) {', '.join(sorted(extra))}")
    if problems:
        raise BadInputError(f"prompt set {name_or_path}: " + "; ".join(problems))
    return PromptSet(name, source, templates)


def _images_line_problems(key: str, text: str) -> list[str]:
    """What is wrong with a user template's ``${images}`` (at most once, alone on its line)."""
    uses = _PLACEHOLDER.findall(text).count(IMAGES)
    if uses > 1:
        return [f"{key}.txt places the images more than once (${{{IMAGES}}} {uses} times)"]
    if uses == 1 and not _IMAGES_LINE.search(text):
        return [f"{key}.txt must put ${{{IMAGES}}} on a line of its own"]
    return []


def check_prompt_source(name_or_path: str, builtin: Traversable) -> None:
    """Refuse a prompt set that is neither a directory nor one of the built-in sets under ``builtin``.

    Cheap (no template is read): commands check this before they start anything.
    """
    if Path(name_or_path).expanduser().is_dir() or builtin.joinpath(name_or_path).is_dir():
        return
    raise BadInputError(
        f"prompt set {name_or_path!r} is neither a built-in set nor a directory "
        f"(built-in: {', '.join(builtin_sets(builtin))})"
    )


def prompt_source(name_or_path: str) -> str:
    """What a run records as its prompt set: a folder's absolute path, or ``builtin:NAME`` for a built-in set.

    A value naming a folder (one that exists, or any with a ``/`` in it, so that runs of a folder
    since deleted can still be found) is a folder; anything else is the name of a built-in set.
    """
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir() or "/" in name_or_path:
        return str(candidate.resolve())
    return f"builtin:{name_or_path}"


def builtin_sets(builtin: Traversable) -> list[str]:
    """Names of the prompt sets in an agent's folder of built-in sets."""
    root = builtin
    return sorted(entry.name for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith(("_", ".")))
