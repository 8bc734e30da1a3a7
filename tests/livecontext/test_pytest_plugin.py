"""The pytest plugin, as a user's project meets it: a test folder of its own, run by pytest in a
subprocess, with livecontext installed (the ``pytest11`` entry point loads the plugin)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

INI = "[pytest]\ntrio_mode = true\n"


def run_pytest(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """pytest in ``folder``, as a user runs it (our own addopts and plugins left out)."""
    import os

    given = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "LIVECONTEXT_CASSETTE"))}
    given.update(env or {})
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:xdist",
                           "-p", "no:cacheprovider", *args], cwd=folder, capture_output=True, text=True,
                          env=given, timeout=600)


def project(tmp_path: Path, test: str, **files: str) -> Path:
    (tmp_path / "pytest.ini").write_text(INI)
    (tmp_path / "test_agent.py").write_text(textwrap.dedent(test))
    for name, text in files.items():
        (tmp_path / name).write_text(textwrap.dedent(text))
    return tmp_path


def test_lc_agent_opens_agents_for_a_test_and_closes_them_after_it(tmp_path: Path) -> None:
    folder = project(tmp_path, '''
        import livecontext
        from livecontext.runtime.models import ScriptedModel

        OPENED = []

        @livecontext.tool
        def add(a: int, b: int) -> int:
            """Add two numbers.

            Args:
                a: One.
                b: The other.
            """
            return a + b

        async def test_an_agent_adds(lc_agent):
            model = ScriptedModel.from_turns([
                {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}, {"text": "5"}])
            agent = await lc_agent(model=model, tools=[add])
            OPENED.append(agent)
            reply = await agent.send("2 + 3?")
            assert reply.text == "5"
            other = await lc_agent(model="echo", thread="other")
            assert (await other.send("hi")).text == "echo: hi"
            await lc_agent.close(other)
            assert (await agent.state()).state.value == "WaitingInput"

        async def test_the_agent_was_closed_after_the_test():
            (agent,) = OPENED
            try:
                await agent.send("again")
            except Exception as exc:
                assert "the agent of thread main is closed" in str(exc), exc
            else:
                raise AssertionError("the agent still answers after its test")
    ''')
    done = run_pytest(folder)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 passed" in done.stdout


def test_lc_clock_runs_an_hour_of_model_latency_in_virtual_time(tmp_path: Path) -> None:
    folder = project(tmp_path, '''
        import trio
        from livecontext.runtime.models import ScriptedModel

        async def test_an_hour_passes(lc_agent, lc_clock):
            model = ScriptedModel.from_turns([{"text": "done", "delay_s": 3600}])
            agent = await lc_agent(model=model)
            start = trio.current_time()
            assert (await agent.send("take an hour")).text == "done"
            assert trio.current_time() - start >= 3600
            assert lc_clock.autojump_threshold == 0
            # the records are stamped in virtual time too: an hour after the epoch
            (asked, answered) = [e.created_at for e in await agent.history()][:2]
            assert (asked.isoformat(), answered.isoformat()) == (
                "2000-01-01T00:00:00+00:00", "2000-01-01T01:00:00+00:00")
    ''')
    done = run_pytest(folder)
    assert done.returncode == 0, done.stdout + done.stderr


def test_lc_system_opens_a_system_from_a_blueprint(tmp_path: Path) -> None:
    folder = project(tmp_path, '''
        async def test_the_pair_answers(lc_system):
            system = await lc_system("pair.toml")
            assert list(system.agents) == ["a", "b"]
            assert (await system.send("b", "hello")).text == "echo: hello"
    ''', **{"pair.toml": '''
        system = "pair"

        [[agents]]
        name = "a"
        model = "echo"

        [[agents]]
        name = "b"
        model = "echo"
    '''})
    done = run_pytest(folder)
    assert done.returncode == 0, done.stdout + done.stderr


SEEDED = '''
    import pytest

    @pytest.mark.lc_seeds(6)
    async def test_seed_three_is_bad(lc_seed):
        assert lc_seed != 3, "seed three breaks it"

    @pytest.mark.lc_seeds([10, 20])
    def test_given_seeds(lc_seed):
        assert lc_seed in (10, 20)

    def test_one_seed_by_default(lc_seed):
        assert lc_seed == 0
'''


def test_lc_seeds_runs_a_test_per_seed_and_a_failing_seed_prints_the_command_that_replays_it(tmp_path: Path) -> None:
    folder = project(tmp_path, SEEDED)
    done = run_pytest(folder, "-rA")
    assert done.returncode == 1
    assert "1 failed, 8 passed" in done.stdout
    assert "test_seed_three_is_bad[seed3]" in done.stdout
    assert "seed 3 failed; run it alone with:\n  pytest 'test_agent.py::test_seed_three_is_bad' --lc-seed 3" in done.stdout
    again = run_pytest(folder, "test_agent.py::test_seed_three_is_bad", "--lc-seed", "3")
    assert again.returncode == 1 and "1 failed" in again.stdout and "passed" not in again.stdout
    good = run_pytest(folder, "test_agent.py::test_seed_three_is_bad", "--lc-seed", "4")
    assert good.returncode == 0 and "1 passed" in good.stdout


@pytest.mark.parametrize("marker", ["lc_seeds(0)", "lc_seeds('abc')", "lc_seeds([1, 'x'])"])
def test_a_seeds_marker_that_names_no_seeds_is_refused_in_one_line(tmp_path: Path, marker: str) -> None:
    folder = project(tmp_path, f'''
        import pytest

        @pytest.mark.{marker}
        def test_x(lc_seed):
            pass
    ''')
    done = run_pytest(folder)
    assert done.returncode != 0
    assert "test_agent.py::test_x: " + marker.replace("lc_seeds(", "lc_seeds(").split("(")[0] in done.stdout + done.stderr


def test_lc_record_sets_the_cassette_mode_for_the_session_and_replay_is_the_default(tmp_path: Path) -> None:
    folder = project(tmp_path, '''
        import os

        def test_mode():
            print("MODE", os.environ.get("LIVECONTEXT_CASSETTE"))
    ''')
    modes = {}
    for args in ((), ("--lc-record",), ("--lc-record=once",), ("--lc-record=none",)):
        done = run_pytest(folder, "-s", *args)
        assert done.returncode == 0, done.stdout + done.stderr
        modes[args] = next(line.split()[-1] for line in done.stdout.splitlines() if "MODE" in line)
    assert modes == {(): "None", ("--lc-record",): "record", ("--lc-record=once",): "once",
                     ("--lc-record=none",): "replay"}


def test_loading_the_plugin_imports_neither_trio_nor_the_runtime() -> None:
    code = ("import sys, livecontext.pytest_plugin; "
            "print(sorted(m for m in sys.modules if m == 'trio' or m.startswith('livecontext.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['livecontext.pytest_plugin']"
