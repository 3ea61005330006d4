"""The repository stands alone: its specification, licence and layout are in it and agree."""

from __future__ import annotations

import configparser
import re
import subprocess
import tomllib

from conftest import REPO

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
