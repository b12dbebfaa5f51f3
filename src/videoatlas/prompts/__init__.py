"""Prompt templates: text files with ``${name}`` placeholders, filled strictly (unknown or missing: error)."""

from __future__ import annotations

import hashlib
import re
import string
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from videoatlas.errors import BadInputError

_PLACEHOLDER = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


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


def builtin_template(name: str, prompt_set: str = "default") -> Template:
    """A template shipped with the package, e.g. ``builtin_template("reask")``."""
    path = resources.files("videoatlas.prompts").joinpath(prompt_set, f"{name}.txt")
    if not path.is_file():
        raise BadInputError(f"no template {name!r} in the built-in prompt set {prompt_set!r}")
    return Template(f"{prompt_set}/{name}", path.read_text(encoding="utf-8"))


# -- prompt sets -------------------------------------------------------------------------------------

TEMPLATE_SPEC: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # name: (variables that must appear, variables that may appear)
    # One system prompt for every Master call and one for every Worker call: calls that show the
    # same images then share their whole prefix, which a server's prefix cache reuses.
    "master.system": (frozenset(), frozenset({"k"})),
    "worker.system": (frozenset(), frozenset({"k"})),
    "search_task.user": (frozenset({"question"}), frozenset({"choices"})),
    "traversal.user": (frozenset({"question"}), frozenset({"choices"})),
    "probe.user": (
        frozenset({"question", "n"}),
        frozenset({"choices", "search_task", "cells", "hints", "evidence", "progress", "k", "duration", "subtitles"}),
    ),
    "worker.user": (
        frozenset({"question", "actions"}),
        frozenset(
            {
                "choices",
                "search_task",
                "start",
                "end",
                "pct",
                "duration",
                "depth",
                "k",
                "cells",
                "previous",
                "collected",
                "subtitles",
                "zoom",
            }
        ),
    ),
    "uncertainty.user": (
        frozenset({"question"}),
        frozenset({"choices", "search_task", "evidence", "progress", "cells", "gaps", "n", "max_range"}),
    ),
    "decide.user": (
        frozenset({"question", "evidence"}),
        frozenset({"choices", "format", "search_task", "coverage"}),
    ),
    "uniform.user": (
        frozenset({"question"}),
        frozenset({"choices", "format", "frames", "sheets", "k", "duration"}),
    ),
    "reask": (frozenset({"error"}), frozenset()),
}


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

    def sha256_of(self, names: Iterable[str]) -> str:
        """Hash over the named templates only: what one agent's results depend on."""
        digest = hashlib.sha256()
        for key in sorted(set(names)):
            digest.update(key.encode() + b"\0" + self.templates[key].text.encode() + b"\0")
        return digest.hexdigest()[:16]

    def __getitem__(self, name: str) -> Template:
        return self.templates[name]

    def render(self, name: str, **values: object) -> str:
        """Fill template ``name`` with the values it uses; values it does not use are ignored.

        Nodes offer every variable the spec allows; a template decides which to show. What the
        spec does not allow was already refused when the set was loaded.
        """
        template = self.templates[name]
        return template.render(**{k: v for k, v in values.items() if k in template.variables})


def load_prompt_set(name_or_path: str = "default") -> PromptSet:
    """Load a built-in set by name or a directory by path, checking every template's variables."""
    candidate = Path(name_or_path).expanduser()
    if candidate.is_dir():
        files = {p.stem: p.read_text(encoding="utf-8") for p in candidate.glob("*.txt")}
        source, name = str(candidate.resolve()), candidate.name
    else:
        root = resources.files("videoatlas.prompts").joinpath(name_or_path)
        if not root.is_dir():
            raise BadInputError(
                f"prompt set {name_or_path!r} is neither a built-in set nor a directory "
                f"(built-in: {', '.join(builtin_sets())})"
            )
        files = {
            entry.name[: -len(".txt")]: entry.read_text(encoding="utf-8")
            for entry in root.iterdir()
            if entry.name.endswith(".txt")
        }
        source, name = f"builtin:{name_or_path}", name_or_path
    problems = []
    templates: dict[str, Template] = {}
    for key, (required, optional) in TEMPLATE_SPEC.items():
        if key not in files:
            problems.append(f"{key}.txt is missing")
            continue
        template = Template(f"{name}/{key}", files[key])
        unknown = template.variables - required - optional
        absent = required - template.variables
        if unknown:
            problems.append(f"{key}.txt uses unknown variable(s) {', '.join(sorted(unknown))}")
        if absent:
            problems.append(f"{key}.txt lacks required variable(s) {', '.join(sorted(absent))}")
        templates[key] = template
    extra = set(files) - set(TEMPLATE_SPEC)
    if extra:
        problems.append(f"unexpected template(s) {', '.join(sorted(extra))}")
    if problems:
        raise BadInputError(f"prompt set {name_or_path}: " + "; ".join(problems))
    return PromptSet(name, source, templates)


def builtin_sets() -> list[str]:
    """Names of the prompt sets shipped with the package."""
    root = resources.files("videoatlas.prompts")
    return sorted(entry.name for entry in root.iterdir() if entry.is_dir() and not entry.name.startswith("_"))
