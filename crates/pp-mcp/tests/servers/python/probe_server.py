"""A small MCP server written with the official Python SDK (FastMCP, stdio), for the
sandbox tests: its tools try to reach what a confined server must not (a file outside
what it may read, a TCP listener) and say what happened instead of failing, so a test
can read the outcome. Installed into a venv by scripts/test.sh
(requirements.txt beside this file)."""

import socket

from mcp.server.fastmcp import FastMCP

server = FastMCP("probe")


@server.tool()
def read_path(path: str) -> str:
    """Reads the file at the absolute `path`: `READ <content>` or `DENIED <why>`."""
    try:
        with open(path, encoding="utf-8") as file:
            return "READ " + file.read()
    except OSError as error:
        return f"DENIED {type(error).__name__}: {error}"


@server.tool()
def connect(port: int) -> str:
    """Connects to 127.0.0.1:`port` and sends a line: `CONNECTED` or `DENIED <why>`."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=5) as connection:
            connection.sendall(b"hello from the probe\n")
        return "CONNECTED"
    except OSError as error:
        return f"DENIED {type(error).__name__}: {error}"


@server.tool()
def echo(message: str) -> str:
    """Returns `message`."""
    return message


if __name__ == "__main__":
    server.run()
