"""Prompt templates: text files with ``${name}`` placeholders, filled strictly (unknown or missing: error)."""

from __future__ import annotations

import hashlib
import re
import string
from dataclasses import dataclass
from importlib import resources

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
                f"template {self.name}: missing {sorted(missing) or 'nothing'}, "
                f"unexpected {sorted(extra) or 'nothing'}"
            )
        return string.Template(self.text).substitute({k: str(v) for k, v in values.items()})


def builtin_template(name: str, prompt_set: str = "default") -> Template:
    """A template shipped with the package, e.g. ``builtin_template("reask")``."""
    path = resources.files("videoatlas.prompts").joinpath(prompt_set, f"{name}.txt")
    if not path.is_file():
        raise BadInputError(f"no template {name!r} in the built-in prompt set {prompt_set!r}")
    return Template(f"{prompt_set}/{name}", path.read_text(encoding="utf-8"))
