"""The `tgsparql` command: one group, its commands in the modules beside this one by what they
do (`ask`, `data`, `records`, `checks`, `golden`, `serving`, `llm`), the flags and store plumbing
they share in `options`.

The rule of this face: the top of the package. Nothing imports it; it may use every wing.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from typing import Any

import click

from tgsparql.cli.ahead import open_ahead

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

    def main(self, args: Sequence[str] | None = None, *rest: Any, **options: Any) -> Any:
        """Runs a command; the store of a reading one is opened meanwhile (`ahead`)."""
        open_ahead(sys.argv[1:] if args is None else list(args))
        return super().main(args, *rest, **options)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in COMMANDS:
            return None
        command: click.Command = getattr(
            importlib.import_module(f"tgsparql.cli.{COMMANDS[cmd_name]}"), cmd_name)
        return command


@click.group(cls=Commands, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tgsparql")
def main() -> None:
    """GraphRAG with query-time explainability, native on SPARQL.

    Ask a question of a knowledge graph; get the answer and a PROV-O record of what was
    retrieved, which edges were selected and why, and where each edge came from.
    """
