"""``livecontext mcp``: serve an agent (or a system's entry agent) as MCP tools."""

from __future__ import annotations

import sys

import click

from ._main import _fail, folder_note, import_from_cwd, main, run_async


@main.command()
@click.option("--store", "store_url", default=None, metavar="URL",
              help="Event store: sqlite:PATH, jsonl:DIR or postgresql://USER@HOST:PORT/DB (default: the "
                   "blueprint's, else $LIVECONTEXT_STORE, else sqlite:.livecontext/livecontext.db).")
@click.option("--thread", "thread_id", default=None, metavar="ID",
              help="The thread of the calls that name none (default: stdio: a new one, said on stderr; "
                   "HTTP: each session's own, mcp-SESSION).")
@click.option("--http", "http_address", default=None, metavar="HOST:PORT",
              help="Serve streamable HTTP at http://HOST:PORT/mcp in place of stdio (port 0: a free one).")
@click.option("--port", default=None, type=click.IntRange(min=0, max=65535), metavar="N",
              help="Serve streamable HTTP on 127.0.0.1:N (0: a free one); the URL is said on stderr.")
@click.option("--allow-remote", is_flag=True,
              help="Let --http listen on an address other machines reach (the server has no authentication).")
@click.option("--agent", "entry", default=None, metavar="NAME",
              help="For a system blueprint: the agent that is served (default: its first [[agents]]).")
@click.option("--base-url", default=None, help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL).")
@click.option("--api-key", default=None, help="API key (default: $OPENAI_API_KEY).")
@click.argument("blueprint_path", metavar="BLUEPRINT.toml")
def mcp(blueprint_path: str, store_url: str | None, thread_id: str | None, http_address: str | None,
        port: int | None, allow_remote: bool, entry: str | None, base_url: str | None, api_key: str | None) -> None:
    """Serve the agent BLUEPRINT.toml describes (a system's entry agent, for [[agents]]) as the
    MCP tools send(text, thread), history(thread, last) and state(thread), on stdin/stdout
    (the default) or over streamable HTTP (--http, --port).

    Each thread is durable in the store: a thread named by a call is opened, or resumed, from
    it; a call that names none uses its session's own thread. docs/mcp.md shows an MCP
    client's configuration.
    """
    host, bound = _address(http_address, port, allow_remote)
    try:
        import mcp as _mcp  # noqa: F401  (is it there?)
    except ImportError:
        _fail("`livecontext mcp` needs the mcp package: pip install 'livecontext[mcp]'", 2)
    from livecontext.runtime import LivecontextError
    from livecontext.runtime.persistence import default_store_url

    from ..blueprint import SystemBlueprint, load_any_blueprint
    from . import _mcp_server as served

    import_from_cwd()
    try:
        bp = load_any_blueprint(blueprint_path)
        if isinstance(bp, SystemBlueprint):
            if entry is not None:
                bp.agent(entry)
        elif entry is not None:
            _fail(f"--agent names an agent of a system blueprint ([[agents]]); {blueprint_path} describes one agent", 2)
        url = store_url or bp.store or default_store_url()
        if thread_id is not None:
            served.check_thread(bp, thread_id)
    except LivecontextError as exc:
        _fail(str(exc).splitlines()[0], 2)
    if store_url is not None and not store_url.strip():
        _fail("--store is empty: give a store URL, or leave --store out for the blueprint's or the default store", 2)
    if url.strip().lower().startswith("memory:"):
        _fail("--store memory: keeps nothing once the server stops; MCP threads are durable: give a "
              "sqlite:, jsonl: or postgresql:// store", 2)
    made_folder = folder_note(url)

    async def go() -> None:
        await served.serve(bp, url, entry=entry, thread=thread_id, host=host, port=bound, base_url=base_url,
                           api_key=api_key, made_folder=made_folder)

    run_async(go, served.interrupt())
    sys.exit(0)


def _address(http_address: str | None, port: int | None, allow_remote: bool) -> tuple[str | None, int]:
    """The host and port to serve HTTP on (``None``: stdio)."""
    if http_address is not None and port is not None:
        _fail("give --http HOST:PORT or --port N, not both", 2)
    if port is not None:
        return "127.0.0.1", port
    if http_address is None:
        if allow_remote:
            _fail("--allow-remote goes with --http HOST:PORT", 2)
        return None, 0
    host, sep, number = http_address.rpartition(":")
    host = host.strip().removeprefix("[").removesuffix("]")
    if not sep or not host or not number.isdigit() or int(number) > 65535:
        _fail(f"--http {http_address!r}: give HOST:PORT, such as 127.0.0.1:8765 (port 0: a free one)", 2)
    if not _is_loopback(host) and not allow_remote:
        _fail(f"--http {http_address}: {host} is reached from other machines and the server has no "
              "authentication; listen on 127.0.0.1, or add --allow-remote", 2)
    return host, int(number)


def _is_loopback(host: str) -> bool:
    """``host`` is this machine only (``localhost``, ``127.0.0.1``, ``::1``)."""
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
