"""The `tgsparql` command: one group, its commands in the modules beside this one by what they
do (`ask`, `data`, `records`, `checks`, `golden`, `serving`, `llm`), the flags and store plumbing
they share in `options`.

The rule of this face: the top of the package. Nothing imports it; it may use every wing.
"""

from __future__ import annotations

import gc
import importlib
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NoReturn


@contextmanager
def _loading(keep: bool = False) -> Iterator[None]:
    """Modules being loaded, without the cyclic collector: loading allocates thousands of
    objects that live as long as the process, and the collector's passes over them meanwhile
    free nothing (about 5 ms of a command that starts). With `keep`, every object allocated
    so far is kept out of its passes for good (gc.freeze): the collector's first passes after
    would otherwise walk them all again, once per generation (about 7 ms of `validate
    --session`); only in a process of its own, as it keeps the caller's objects too."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if was_enabled:
            gc.enable()


with _loading():
    import click

    from tgsparql.cli.ahead import READING_COMMANDS, open_ahead

COMMANDS = {
    "demo": "ask", "query": "ask",
    "load": "data", "export": "data", "ingest": "data", "index": "data", "migrate": "data",
    "rollup": "data",
    "sessions": "records", "explain": "records", "trace": "records",
    "validate": "checks", "drift": "checks", "doctor": "checks",
    "golden": "golden", "check": "golden",
    "serve": "serving",
    "llm": "llm",
}
"""Each command, by the module beside this one that defines it (under the command's name)."""


class Commands(click.Group):
    """The group that imports a command's module only when the command is run or listed: a CI
    step running `validate` does not pay for loading the LLM backends and the pipeline."""

    own_process = False
    """Whether the command line run is the process's own (`main` called without arguments),
    not one a caller in Python hands it."""

    def main(self, args: Sequence[str] | None = None, *rest: Any, **options: Any) -> Any:
        """Runs a command; the store of a reading one is opened meanwhile (`ahead`).

        The process of a reading command (the command line its own: `args` not given) ends as
        soon as its output is flushed: by then the command has closed what it opened (the
        store `check` records its replayed sessions in is flushed and closed as its block
        ends), and Python's teardown, which frees every object one by one, only delays the exit
        code a CI step waits for (about 10 ms of `validate --session`)."""
        self.own_process = args is None
        open_ahead(sys.argv[1:] if args is None else list(args))
        if args is not None or len(sys.argv) < 2 or sys.argv[1] not in READING_COMMANDS:
            return super().main(args, *rest, **options)
        try:
            return super().main(args, *rest, **options)
        except SystemExit as done:
            _leave(done.code)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        with _loading(keep=self.own_process):
            module = importlib.import_module(f"tgsparql.cli.{COMMANDS[cmd_name]}")
        command: click.Command = getattr(module, cmd_name)
        return command


def _leave(code: object) -> NoReturn:
    """Exit with `code` as `sys.exit` would, once stdout and stderr are flushed, skipping
    the interpreter's teardown."""
    status = code if isinstance(code, int) else (0 if code is None else 1)
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started without it
            continue
        try:
            if stream is sys.stderr and isinstance(code, str):
                print(code, file=stream)
            stream.flush()
        except (OSError, ValueError):  # a reader that went away, or a closed stream
            pass
    os._exit(status)


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tgsparql")
def main() -> None:
    """GraphRAG with query-time explainability, native on SPARQL.

    Ask a question of a knowledge graph; get the answer and a PROV-O record of what was
    retrieved, which edges were selected and why, and where each edge came from.
    """
