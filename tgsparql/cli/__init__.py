"""The `tgsparql` command: one group, its commands in the modules beside this one by what they
do (`ask`, `data`, `records`, `checks`, `golden`, `serving`, `llm`), the flags and store plumbing
they share in `options`.

The rule of this face: the top of the package. Nothing imports it; it may use every wing.
"""

from __future__ import annotations

import click

from tgsparql.cli.ask import demo, query
from tgsparql.cli.checks import doctor, validate
from tgsparql.cli.data import export, index, ingest, load, migrate, rollup
from tgsparql.cli.golden import check, golden
from tgsparql.cli.llm import llm
from tgsparql.cli.records import explain, sessions, trace
from tgsparql.cli.serving import serve


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tgsparql")
def main() -> None:
    """GraphRAG with query-time explainability, native on SPARQL.

    Ask a question of a knowledge graph; get the answer and a PROV-O record of what was
    retrieved, which edges were selected and why, and where each edge came from.
    """


for _command in (demo, query, load, export, ingest, index, migrate, rollup, sessions, explain,
                 trace, validate, doctor, golden, check, serve, llm):
    main.add_command(_command)
