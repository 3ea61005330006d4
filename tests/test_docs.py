"""The repository stands alone: its specification, licence and layout are in it and agree."""

from __future__ import annotations

import configparser
import re
import subprocess
import tomllib

import click
import pyoxigraph as ox
from conftest import REPO

from tgsparql.cli import main
from tgsparql.rdf.vocab import SH, TG

SPEC = REPO / "docs" / "spec.md"
LAYOUT = REPO / "docs" / "layout.md"
OLD_REFERENCE = "SPEC" + " §"
"""How references read before the specification was in the repository (spelt apart here)."""


def tracked_text_files() -> list[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True,
                            check=True).stdout.split()
    return [name for name in listed if name.endswith((".py", ".md", ".rq", ".ttl", ".j2"))]


def test_every_spec_reference_names_a_section_of_docs_spec() -> None:
    sections = set(re.findall(r"^## (\d+)\. ", SPEC.read_text(encoding="utf-8"), re.M))
    cited: dict[str, set[str]] = {}
    for name in tracked_text_files():
        text = (REPO / name).read_text(encoding="utf-8")
        assert OLD_REFERENCE not in text, f"{name} cites the old specification"
        for match in re.finditer(r"docs/spec\.md (§\d+(?:, §\d+)*)", text):
            for number in re.findall(r"\d+", match.group(1)):
                cited.setdefault(number, set()).add(name)
    assert len(cited) >= 8
    assert set(cited) <= sections, {n: cited[n] for n in set(cited) - sections}


def test_the_licence_is_the_one_pyproject_declares() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "Apache-2.0"
    licence = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License\n                           Version 2.0, January 2004" in licence
    assert "END OF TERMS AND CONDITIONS" in licence


def test_the_layout_page_names_every_module_and_folder() -> None:
    layout = LAYOUT.read_text(encoding="utf-8")
    package = REPO / "tgsparql"
    folders = sorted(f"{p.parent.relative_to(REPO)}/" for p in package.rglob("__init__.py")
                     if p.parent != package)
    top = [f"{p.name}/" for p in REPO.iterdir() if p.is_dir() and not p.name.startswith(".")
           and p.name not in {"build", "dist"} and not p.name.endswith(".egg-info")
           and subprocess.run(["git", "ls-files", p.name], cwd=REPO, capture_output=True,
                              text=True).stdout]
    assert not [p for p in package.glob("*.py") if p.name != "__init__.py"], "modules outside wings"
    for name in ["tgsparql/", *folders, *top, "LICENSE", ".ci/run", ".importlinter"]:
        assert f"`{name}`" in layout, name
    for folder in folders:  # and each module of a folder, by name in the folder's row
        row = next(line for line in layout.splitlines() if line.startswith(f"| `{folder}`"))
        for module in (REPO / folder).glob("*.py"):
            assert module.name == "__init__.py" or f"`{module.stem}`" in row, folder + module.name


def test_the_layout_page_names_the_layers_the_import_contract_keeps() -> None:
    contract = configparser.ConfigParser()
    contract.read(REPO / ".importlinter", encoding="utf-8")
    layers = [line.strip() for line in contract["importlinter:contract:wings"]["layers"].split("\n")
              if line.strip()]
    said = re.search(r"From the bottom: (.*?)\.\n", LAYOUT.read_text(encoding="utf-8"), re.S)
    assert said is not None
    chain = [" | ".join(re.findall(r"`(\w+)`", step)) for step in said.group(1).split("←")]
    assert chain == layers[::-1]
    for wing in {name for layer in layers for name in layer.split(" | ")}:
        rule = (REPO / "tgsparql" / wing / "__init__.py").read_text(encoding="utf-8")
        assert "The rule of this" in rule, f"tgsparql/{wing}/__init__.py states no rule"


DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*[a-z0-9]")
OTHER_PROGRAMS = [REPO / "tgsparql" / "testing" / "plugin.py", REPO / "benchmarks" / "evaluate.py"]
"""Programs besides `tgsparql` whose flags the docs name: the pytest plugin, the evaluation."""


def cli_options() -> dict[str, list[click.Option]]:
    """Every long flag of every `tgsparql` command, group and subcommand, with its options."""
    found: dict[str, list[click.Option]] = {"--help": []}
    commands: list[click.Command] = [main]
    context = click.Context(main)
    while commands:
        command = commands.pop()
        if isinstance(command, click.Group):
            commands.extend(sub for name in command.list_commands(context)
                            if (sub := command.get_command(context, name)) is not None)
        for option in command.params:
            if isinstance(option, click.Option):
                for flag in [*option.opts, *option.secondary_opts]:
                    if flag.startswith("--"):
                        found.setdefault(flag, []).append(option)
    return found


def docs_text() -> str:
    return "\n".join(page.read_text(encoding="utf-8") for page in DOCS)


def test_every_flag_the_docs_name_exists_and_every_option_is_named() -> None:
    named = {flag for line in docs_text().splitlines()
             if not line.lstrip().startswith(("curl ", "pip "))  # their own flags
             for flag in FLAG.findall(line)}
    others = {flag for program in OTHER_PROGRAMS
              for flag in re.findall(r"(?:addoption|add_argument)\(\s*\"(--[\w-]+)\"",
                                     program.read_text(encoding="utf-8"))}
    options = cli_options()
    assert named - set(options) - others == set()
    assert set(options) - named == set()


def tg_terms(text: str) -> set[str]:
    return set(re.findall(r"(?<![\w:])tg:([A-Za-z]\w*)", text))


def test_every_tg_term_the_docs_name_is_the_codes_and_the_spec_names_every_shape_path() -> None:
    code = "\n".join(path.read_text(encoding="utf-8") for folder in ("tgsparql", "shapes", "queries")
                     for path in (REPO / folder).rglob("*") if path.suffix in {".py", ".rq", ".ttl"})
    unknown = {name for name in tg_terms(docs_text())
               if not re.search(rf"(?:tg:|/ns/){name}\b", code)}
    assert unknown == set()
    shapes = ox.Store()
    for shapes_file in (REPO / "shapes").glob("*.ttl"):
        shapes.load(path=shapes_file, format=ox.RdfFormat.TURTLE)
    paths = {str(quad.object.value)[len(TG):] for quad in shapes.quads_for_pattern(
        None, ox.NamedNode(SH + "path"), None) if isinstance(quad.object, ox.NamedNode)
        and quad.object.value.startswith(TG)}
    assert len(paths) > 20
    assert paths - tg_terms(SPEC.read_text(encoding="utf-8")) == set()


def spec_limits() -> list[tuple[str, int]]:
    """(flag, number) for each number the limits table of docs/spec.md §10 gives a flag to, as
    "30 s per query (`--timeout`)" or "2000 of one, 20 000 of the other (`--a`, `--b`)"."""
    spec = SPEC.read_text(encoding="utf-8")
    table = spec[spec.index("## 10. Limits"):]
    pairs: list[tuple[str, int]] = []
    for row in re.findall(r"^\| .*? \| (.*) \|$", table, re.M):
        start = 0
        for group in re.finditer(r"\((`--[\w-]+`(?:, `--[\w-]+`)*)[;)]", row):
            flags = re.findall(r"--[\w-]+", group.group(1))
            numbers = [int(re.sub(r"[ ,]", "", number)) for number in
                       re.findall(r"\d+(?:[ ,]\d{3})*", row[start:group.start()])]
            pairs.extend(zip(flags, numbers[-len(flags):], strict=True))
            start = group.end()
    return pairs


def test_the_spec_limits_are_the_cli_defaults() -> None:
    options = cli_options()
    limits = spec_limits()
    assert {"--ask-rate", "--max-results", "--timeout", "--triple-limit"} <= dict(limits).keys()
    for flag, number in limits:
        assert options[flag], flag
        for option in options[flag]:
            assert option.default == number, (flag, option.default, number)
