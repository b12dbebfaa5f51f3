"""One version: the package root's (``videoatlas --version``) is the installed distribution's (what evals record)."""

from __future__ import annotations

from importlib.metadata import version

import pytest

import videoatlas

pytestmark = pytest.mark.unit


def test_the_package_and_its_distribution_agree() -> None:
    assert videoatlas.__version__ == version("videoatlas")
