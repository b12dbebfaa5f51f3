"""The server commands start like servers: a taken port is one line and exit 2, a bound one says where it listens."""

from __future__ import annotations

import os
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from process_helpers import EXE
from videoatlas.cli.main import build_parser, subcommand_parsers

pytestmark = pytest.mark.e2e

UNREACHABLE = "http://127.0.0.1:9/v1"
"""An endpoint nothing answers: ``mcp`` calls it only for a question, so serving needs none."""


def server_args(command: str, root: Path) -> list[str]:
    """The command line of one server, less its port."""
    if command == "ui":
        return ["ui"]
    if command == "mcp":
        return ["mcp", "--http", "--root", str(root), "--base-url", UNREACHABLE]
    return ["standin"]


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {**os.environ, "VIDEOATLAS_HOME": str(tmp_path / "home")}


@pytest.fixture
def taken() -> Iterator[int]:
    """A loopback port another process is listening on."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        yield sock.getsockname()[1]


@pytest.mark.parametrize("command", ["ui", "mcp", "standin"])
def test_a_port_in_use_is_one_line_and_exit_2(command: str, taken: int, tmp_path: Path, env: dict[str, str]) -> None:
    cmd = [EXE, *server_args(command, tmp_path), "--port", str(taken)]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr.endswith(f"port {taken} on 127.0.0.1 is already in use; choose another with --port\n")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


@pytest.mark.parametrize(("command", "path"), [("ui", "/"), ("mcp", "/mcp")])
def test_a_server_says_the_address_it_listens_on(command: str, path: str, tmp_path: Path, env: dict[str, str]) -> None:
    with socket.create_server(("127.0.0.1", 0)) as sock:
        port = sock.getsockname()[1]
    proc = subprocess.Popen(
        [EXE, *server_args(command, tmp_path), "--port", str(port)], env=env, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stderr is not None
        first = proc.stderr.readline()
        assert f"http://127.0.0.1:{port}{path}" in first
        with socket.create_connection(("127.0.0.1", port), timeout=30):  # bound before it said so
            pass
    finally:
        proc.terminate()
        proc.communicate(timeout=60)


def test_the_ui_and_mcp_default_to_different_ports() -> None:
    parsers = {p.prog.split()[-1]: p for p in subcommand_parsers(build_parser(agent_settings=False))}
    ui = parsers["ui"].parse_args([]).port
    mcp = parsers["mcp"].parse_args(["--root", "."]).port
    assert ui == 8765 and mcp != ui
