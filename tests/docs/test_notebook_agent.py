"""examples/notebook_agent.ipynb executed by nbclient on a real ipykernel kernel (this Python's):
top-level ``await livecontext.aio.start_agent(...)`` opens an agent in the kernel's asyncio
loop that later cells send to and stream from; after the kernel is restarted, the cells below
the notebook's "After a kernel restart" resume the same thread from the SQLite file and go on."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from jupyter_client.kernelspec import KernelSpecManager
from jupyter_client.manager import AsyncKernelManager
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "notebook_agent.ipynb"


def text_of(cell: Any) -> str:
    """What a code cell showed: its printed text and its value's plain text, in order."""
    parts = []
    for output in cell.outputs:
        if output.output_type == "stream":
            parts.append(output.text)
        elif output.output_type == "execute_result":
            parts.append(output.data["text/plain"] + "\n")
        elif output.output_type == "error":
            raise AssertionError(f"the cell failed: {output.ename}: {output.evalue}\n{cell.source}")
    return "".join(parts)


def kernel_of_this_python(tmp_path: Path) -> AsyncKernelManager:
    """A manager of an ipykernel run by this interpreter (a kernel spec of our own in a temporary
    folder: whatever kernels the machine has installed are not used)."""
    spec = tmp_path / "kernels" / "python3"
    spec.mkdir(parents=True)
    (spec / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))
    specs = KernelSpecManager(kernel_dirs=[str(tmp_path / "kernels")], ensure_native_kernel=False)
    return AsyncKernelManager(kernel_name="python3", kernel_spec_manager=specs)


def test_a_notebook_opens_an_agent_sends_streams_and_resumes_it_after_a_kernel_restart(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))  # (the kernel's own files, not the home's)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    monkeypatch.delenv("LIVECONTEXT_STORE", raising=False)
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    cells = notebook.cells
    (restart,) = [k for k, cell in enumerate(cells) if cell.source.startswith("## After a kernel restart")]
    code = [k for k, cell in enumerate(cells) if cell.cell_type == "code"]
    km = kernel_of_this_python(tmp_path)
    # (the timeout is a guard against a cell that never ends, not a speed bound)
    client = NotebookClient(notebook, km=km, timeout=600, resources={"metadata": {"path": str(tmp_path)}})
    pids: list[int] = []

    async def execute() -> None:
        async with client.async_setup_kernel():
            pids.append(await kernel_pid(client))
            for k in (k for k in code if k < restart):
                await client.async_execute_cell(cells[k], k)
            await km.restart_kernel(now=False)  # as Kernel > Restart does
            await client.kc.wait_for_ready(timeout=600)
            pids.append(await kernel_pid(client))
            for k in (k for k in code if k > restart):
                await client.async_execute_cell(cells[k], k)

    asyncio.run(execute())
    assert pids[0] != pids[1]  # a new kernel process ran the cells below the restart
    opened, said, streamed, resumed, went_on, closed = (text_of(cells[k]) for k in code)
    assert opened == "<AioAgent of thread 'notebook', open>\n"
    assert said == "echo: hello\n"
    *kinds, last = streamed.splitlines()
    assert last == "reply: echo: tell me more"
    assert "BeforeModelCall" in kinds and "AfterModelCall" in kinds
    assert resumed.splitlines() == ["ModelInputEntry hello", "ModelOutputEntry echo: hello",
                                    "ModelInputEntry tell me more", "ModelOutputEntry echo: tell me more"]
    assert went_on == "echo: still there?\n"
    assert closed == ""
    assert (tmp_path / "notebook_agent.db").is_file()  # the store beside the notebook


async def kernel_pid(client: NotebookClient) -> int:
    """The kernel's process id, asked of the kernel itself (without touching the notebook)."""
    messages: list[dict[str, Any]] = []
    reply = await client.kc.execute_interactive("import os; print(os.getpid(), end='')", timeout=600,
                                                output_hook=messages.append)
    assert reply["content"]["status"] == "ok"
    (output,) = [m for m in messages if m["msg_type"] == "stream"]
    return int(output["content"]["text"])


def test_a_run_started_as_a_task_in_one_cell_is_cancelled_from_another_and_the_agent_goes_on(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # (Kernel > Interrupt does not stop a cell that awaits, in ipykernel 7: a task is the way to
    # keep a long run stoppable; docs/asyncio.md, "In Jupyter")
    monkeypatch.setenv("IPYTHONDIR", str(tmp_path / "ipython"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))
    (tmp_path / "turns.json").write_text(json.dumps({"turns": [
        {"tool_calls": [{"name": "wait_for_news", "arguments": {}}]}, {"text": "nothing new"}, {"text": "again"}]}))
    sources = [
        "import asyncio, trio, livecontext, livecontext.aio\n"
        "started = asyncio.Event()\n"
        "\n"
        "@livecontext.tool\n"
        "async def wait_for_news() -> str:\n"
        "    \"\"\"Wait for news (forever, the first time).\"\"\"\n"
        "    if not started.is_set():\n"
        "        asyncio.get_running_loop().call_soon_threadsafe(started.set)\n"
        "        await trio.sleep_forever()\n"
        "    return 'no news'\n"
        "\n"
        "agent = await livecontext.aio.start_agent(model='scripted:turns.json', tools=[wait_for_news],\n"
        "                                          store='sqlite:nb.db', thread='t')",
        "task = asyncio.create_task(agent.send('any news?'))",
        "await started.wait()  # the tool runs, in the background\n"
        "print(task.done())",
        "task.cancel()\n"
        "try:\n"
        "    await task\n"
        "except asyncio.CancelledError:\n"
        "    print('cancelled')",
        "print((await agent.send('try again')).text)",
        "from livecontext.protocol.history import ToolResultsEntry\n"
        "print([r.status.value for e in await agent.history() if isinstance(e, ToolResultsEntry) for r in e.results])",
        "await agent.aclose()",
    ]
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in sources])
    client = NotebookClient(notebook, km=kernel_of_this_python(tmp_path), timeout=600,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    shown = [text_of(cell) for cell in notebook.cells]
    # the tool's step was cut (the tool is not run again: its result is recorded as interrupted),
    # and the agent answered the next send
    assert shown == ["", "", "False\n", "cancelled\n", "again\n", "['interrupted']\n", ""]
