"""Text that is not UTF-8 is refused where it enters, in one line, before anything is written
(issue 16, finding 4). A command line's bytes reach Python as lone surrogates; so do a
pipe's, read with ``surrogateescape``. The chat's and the model server's bytes are tested with
the chat and the OpenAI client."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

import livecontext
from livecontext.actors.agent._text import InvalidTextError
from livecontext.actors.cli import main

BAD = "bad \udcff\udcfe"
"""``bad \\xff\\xfe`` as Python decodes it from argv."""


def _invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), env={"LIVECONTEXT_STORE": None, "COLUMNS": "200"})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(("flag", "what"), [("--input", "input"), ("--pin", "pinned input"),
                                            ("--system", "system prompt")])
def test_run_refuses_text_that_is_not_utf8_in_one_line_and_writes_no_thread(tmp_path: Path, flag: str,
                                                                            what: str) -> None:
    store = tmp_path / "x.db"
    args = ["run", "--store", f"sqlite:{store}", flag, BAD]
    if flag != "--input":
        args += ["--input", "fine"]
    code, out, err = _invoke(*args)
    assert code == 1 and out == ""
    assert err.splitlines() == [
        f"livecontext: error: the {what} 'bad \\xff\\xfe' is not valid UTF-8 (at character 4); give it as UTF-8 "
        "text (check the encoding of your terminal or file); nothing was written"]
    assert not store.exists()


def test_a_resumed_thread_is_left_as_it_was(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'x.db'}"
    assert _invoke("run", "--store", url, "--input", "hello")[0] == 0
    before = _invoke("history", "--store", url, "--thread", "main")[1]
    code, _, err = _invoke("run", "--store", url, "--input", BAD)
    assert code == 1 and "not valid UTF-8" in err
    assert _invoke("history", "--store", url, "--thread", "main")[1] == before


async def test_an_agent_refuses_such_text_and_keeps_its_thread() -> None:
    async with livecontext.open_agent(model="echo") as agent:
        await agent.send("hello")
        before = await agent.history()
        with pytest.raises(InvalidTextError, match="the input 'bad \\\\xff\\\\xfe' is not valid UTF-8"):
            await agent.send(BAD)
        assert await agent.history() == before
        reply = await agent.send("still here")
        assert "still here" in reply.text
