"""The approval keys of a blueprint: ``approval`` (tool names), ``approval_policy`` (a function),
``[[tools]] approval = true`` and ``[[apps]] approval`` (all its tools, or some), each reaching
the agent; a name that is no tool, or a policy that cannot be imported, is one clear error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import livecontext
from livecontext import TaskStatus
from livecontext.actors.blueprint import BlueprintError, load_blueprint
from livecontext.runtime.models import ScriptedModel

TOOLS = '''
[[tools]]
use = "tests.support.approval_tools:look"
[[tools]]
use = "tests.support.approval_tools:send_mail"
'''


def blueprint(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "agent.toml"
    path.write_text('model = "echo"\n' + text, encoding="utf-8")
    return path


def test_each_key_adds_its_tools_to_the_policy(tmp_path: Path) -> None:
    bp = load_blueprint(blueprint(tmp_path, '''approval = ["look"]
approval_policy = "tests.support.approval_tools:big_mails"
[[apps]]
use = "notebook"
approval = ["notebook_replace"]
[[tools]]
use = "tests.support.approval_tools:send_mail"
approval = true
[[tools]]
use = "tests.support.approval_tools:look"
'''))
    policy = bp.settings.approval
    assert policy.names == {"look", "send_mail", "notebook_replace"}
    assert policy.path == "tests.support.approval_tools:big_mails" and policy.check is not None


def test_an_app_with_approval_true_makes_all_its_tools_need_it(tmp_path: Path) -> None:
    bp = load_blueprint(blueprint(tmp_path, '[[apps]]\nuse = "notebook"\napproval = true\n'))
    assert bp.settings.approval.names == {"notebook_replace", "notebook_replace_span"}


def test_no_key_means_no_policy(tmp_path: Path) -> None:
    assert not load_blueprint(blueprint(tmp_path, TOOLS)).settings.approval


@pytest.mark.parametrize(("text", "said"), [
    ('approval = ["pay"]\n' + TOOLS, "agent.toml:2: approval names 'pay', not tools of the agent: its tools are look, "),
    ('approval_policy = "nowhere.at.all:f"\n', "approval policy 'nowhere.at.all:f': cannot import nowhere.at.all"),
    ('approval_policy = "tests.support.approval_tools:nothing"\n', "tests.support.approval_tools has no function nothing"),
    ('[[apps]]\nuse = "notebook"\napproval = ["pay"]\n', "[[apps]] notebook approval names 'pay', not tools of the app"),
])
def test_a_bad_approval_key_is_one_clear_error(tmp_path: Path, text: str, said: str) -> None:
    with pytest.raises(BlueprintError) as caught:
        load_blueprint(blueprint(tmp_path, text))
    assert said in str(caught.value) and "\n" not in str(caught.value).strip()


async def test_a_blueprints_tool_with_approval_stops_the_agent_for_it(tmp_path: Path) -> None:
    path = blueprint(tmp_path, TOOLS.replace('send_mail"\n', 'send_mail"\napproval = true\n'))
    model = ScriptedModel.from_turns([
        {"tool_calls": [{"name": "look", "arguments": json.dumps({"what": "sky"})},
                        {"name": "send_mail", "arguments": json.dumps({"to": "bob"})}]}, {"text": "done"}])
    async with livecontext.open_agent(blueprint=path, model=model) as agent:
        reply = await agent.send("mail")
    assert reply.status.status is TaskStatus.WAITING_APPROVAL
    assert reply.status.waiting_on == "approval of send_mail call call_0_1"
