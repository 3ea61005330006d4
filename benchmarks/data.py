"""Third-party data: found through one setting, `TGSPARQL_DATA`, never carried in the repository.

`TGSPARQL_DATA` names a folder laid out as

    w3c-shacl/manifest.ttl, w3c-shacl/core/...      the W3C SHACL Core test suite
    datasets/2wiki/corpus.json, questions_dev.json  2WikiMultiHopQA (paragraphs, 500 dev questions)
    datasets/redocred/dev_revised.json, rel_info.json  Re-DocRED dev and its relation labels

The W3C suite runner, the importers, the evaluation and their tests read it from there; tests
whose data is missing skip with the reason. `python -m benchmarks.data fetch DIR` fills such a
folder from the published sources (`.ci/run` does, when it has no folder to point at).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Final

ENV: Final = "TGSPARQL_DATA"
W3C_REPOSITORY: Final = "https://github.com/w3c/data-shapes"
W3C_COMMIT: Final = "ff9edb9"
W3C_CORE: Final = "data-shapes-test-suite/tests/core"
RAW: Final = "https://raw.githubusercontent.com"
DOWNLOADS: Final = {
    "datasets/2wiki/corpus.json":
        f"{RAW}/OSU-NLP-Group/HippoRAG/c617143/reproduce/dataset/2wikimultihopqa_corpus.json",
    "datasets/redocred/dev_revised.json":
        f"{RAW}/tonytan48/Re-DocRED/ccfb54f5ddf5836027c87badda10f6dfc56efaac/data/dev_revised.json",
}
QUESTIONS: Final = f"{RAW}/weiyifan1023/SeRAG/660121d/dataset/2wikimultihop/questions.json"
WIKIDATA: Final = "https://www.wikidata.org/w/api.php"
ROOT_MANIFEST: Final = """\
@prefix mf: <http://www.w3.org/2001/sw/DataAccess/tests/test-manifest#> .

<> a mf:Manifest ;
    mf:include <core/manifest.ttl> .
"""


class MissingData(FileNotFoundError):
    """Third-party data that is not there; the message says what and how to provide it."""


def data_path(*parts: str) -> Path:
    """A path under the `TGSPARQL_DATA` folder, which must exist."""
    root = os.environ.get(ENV, "")
    if not root:
        raise MissingData(f"{ENV} is not set: it names the folder of third-party data "
                          f"(w3c-shacl/, datasets/); `python -m benchmarks.data fetch DIR` fills one")
    path = Path(root).joinpath(*parts)
    if not path.exists():
        raise MissingData(f"{path} does not exist ({ENV}={root})")
    return path


def _write(target: Path, data: bytes) -> None:
    """Whole or not at all: a cut download must not pass for the file next time."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(target.name + ".part")
    partial.write_bytes(data)
    partial.replace(target)


def _download(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as response:
        return response.read()


def _fetch_w3c(root: Path) -> None:
    """The suite's Core tests at the commit the known misses were measured on (a blobless clone
    reads only the files of that one tree)."""
    with tempfile.TemporaryDirectory() as scratch:
        clone = Path(scratch) / "data-shapes"
        git = ["git", "-c", "advice.detachedHead=false"]
        subprocess.run([*git, "clone", "--quiet", "--filter=blob:none", "--no-checkout",
                        W3C_REPOSITORY, str(clone)], check=True, timeout=300)
        subprocess.run([*git, "-C", str(clone), "checkout", "--quiet", W3C_COMMIT, "--", W3C_CORE],
                       check=True, timeout=300)
        shutil.rmtree(root / "w3c-shacl", ignore_errors=True)
        shutil.copytree(clone / W3C_CORE, root / "w3c-shacl" / "core")
    _write(root / "w3c-shacl" / "manifest.ttl", ROOT_MANIFEST.encode())


def _relation_labels(dev_revised: Path) -> dict[str, str]:
    """Re-DocRED's relations with their English Wikidata labels (what DocRED's rel_info holds)."""
    ids = sorted({label["r"] for doc in json.loads(dev_revised.read_text(encoding="utf-8"))
                  for label in doc["labels"]}, key=lambda p: int(p[1:]))
    labels: dict[str, str] = {}
    for start in range(0, len(ids), 50):
        query = urllib.parse.urlencode({"action": "wbgetentities", "format": "json",
                                        "props": "labels", "languages": "en",
                                        "ids": "|".join(ids[start:start + 50])})
        entities = json.loads(_download(f"{WIKIDATA}?{query}"))["entities"]
        labels.update({p: entities[p]["labels"]["en"]["value"] for p in ids[start:start + 50]})
    return labels


def _questions() -> bytes:
    return json.dumps(json.loads(_download(QUESTIONS))[::2]).encode()  # the 500 even records


def fetch(root: Path) -> list[str]:
    """Fill `root` with every file of the layout that it lacks; one line per source that could
    not be fetched (the others are fetched all the same)."""
    steps: list[tuple[str, Callable[[], None]]] = [("w3c-shacl/manifest.ttl",
                                                    lambda: _fetch_w3c(root))]
    for relative, url in DOWNLOADS.items():
        steps.append((relative, lambda r=relative, u=url: _write(root / r, _download(u))))
    steps.append(("datasets/2wiki/questions_dev.json",
                  lambda: _write(root / "datasets/2wiki/questions_dev.json", _questions())))
    steps.append(("datasets/redocred/rel_info.json", lambda: _write(
        root / "datasets/redocred/rel_info.json",
        json.dumps(_relation_labels(root / "datasets/redocred/dev_revised.json")).encode())))
    failures = []
    for relative, step in steps:
        if (root / relative).exists():
            continue
        try:
            step()
        except (OSError, subprocess.SubprocessError, ValueError, KeyError) as error:
            failures.append(f"{relative}: {error}")
    return failures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fetch the third-party data into a folder.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch", help="fill DIR from the published sources").add_argument(
        "dir", type=Path)
    args = parser.parse_args(argv)
    failures = fetch(args.dir)
    for failure in failures:
        print(f"error: not fetched: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
