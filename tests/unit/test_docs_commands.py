"""Every command ``docs/components.md`` (Running the components) shows exists with the flags it uses."""

from __future__ import annotations

import re
import shlex

import pytest

from kueue_bridge.cli import main
from tests.docs_text import page


def documented_commands() -> list[list[str]]:
    block = re.search(r"```\n(.*?)```", page("components.md"), re.S)
    assert block is not None, "the page has a command block"
    commands = []
    for line in block.group(1).splitlines():
        command = line.split("#", 1)[0].strip()
        if command:
            commands.append(shlex.split(command))
    return commands


COMMANDS = documented_commands()


def test_the_page_shows_every_component() -> None:
    assert {argv[1] for argv in COMMANDS} >= {"config", "webhook", "reconciler", "certs"}


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(a[:3]) for a in COMMANDS])
def test_command_and_flags_exist(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert argv[0] == "kueue-bridge"
    words = argv[1:]
    path = list(words[: next((i for i, w in enumerate(words) if w.startswith("-")), len(words))])
    if path[-1].endswith(".yaml"):  # positional FILE of `config validate`
        path = path[:-1]
    try:
        code: object = main([*path, "--help"])
    except SystemExit as exited:  # argparse's --help exits; some components return instead
        code = exited.code
    assert code == 0
    help_text = capsys.readouterr().out
    for flag in (w for w in words if w.startswith("--")):
        assert flag in help_text, f"{' '.join(path)}: {flag} is not an option"
