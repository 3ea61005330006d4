"""The golden file: questions and what must hold of each answer and its explanation
(docs/golden.md). Read with every problem named by its question and field, written back in the
same form, so a team can freeze today's answers and edit what it froze.

The file is YAML (or JSON, which is YAML too, read as JSON when its name ends in `.json`): a
mapping with `questions`, a list of entries. Edges are written as subject, predicate and object,
each an IRI or a term in N-Triples syntax (`"1867"^^<http://www.w3.org/2001/XMLSchema#gYear>`,
`<<( <s> <p> <o> )>>`), or as one N-Triples line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal, TypeVar, cast

import pyoxigraph as ox
import yaml

from tgsparql.asking.messages import rdf_text
from tgsparql.asking.pipeline import QuestionError, check_question

FORMAT_VERSION: Final = 1
AnswerHow = Literal["exact", "contains", "pattern"]
ANSWER_HOWS: Final[tuple[AnswerHow, ...]] = ("exact", "contains", "pattern")
Verdict = Literal["conforms", "violates"]
VERDICTS: Final[tuple[Verdict, ...]] = ("conforms", "violates")
MAX_FILE_BYTES: Final = 64 * 1024 * 1024
"""A golden file larger than this is refused before it is parsed."""
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:\S+")
_PROBE = "<urn:tgsparql:golden:s> <urn:tgsparql:golden:p> {} ."
T = TypeVar("T")


class GoldenError(ValueError):
    """A golden file that cannot be used; the message names the file, the entry and the field."""


@dataclass(frozen=True)
class SourceMark:
    """Where a fact is stated, as far as a golden entry pins it: the document, and optionally
    the page number, the chunk index and the evidence sentence. A field left out is not
    compared."""

    document: str
    page: int | None = None
    chunk: int | None = None
    sentence: str | None = None

    def covers(self, other: SourceMark) -> bool:
        """Whether `other` is this place: the same document, and the same in every field this
        mark gives."""
        return self.document == other.document and all(
            mine is None or mine == theirs
            for mine, theirs in ((self.page, other.page), (self.chunk, other.chunk),
                                 (self.sentence, other.sentence)))

    def describe(self) -> str:
        where = [self.document]
        if self.page is not None:
            where.append(f"page {self.page}")
        if self.chunk is not None:
            where.append(f"chunk {self.chunk}")
        text = ", ".join(where)
        return text + (f": {json.dumps(self.sentence, ensure_ascii=False)}"
                       if self.sentence is not None else "")

    def to_json(self) -> dict[str, Any]:
        return {key: value for key, value in self.__dict__.items() if value is not None}


@dataclass(frozen=True)
class ExpectedEdge:
    """An edge that must be selected; `sources`, when given, the places that must state it (no
    more, no fewer); `cited`, when given, whether the answer must cite it."""

    edge: ox.Triple
    sources: tuple[SourceMark, ...] | None = None
    cited: bool | None = None

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = edge_json(self.edge)
        if self.sources is not None:
            data["sources"] = [source.to_json() for source in self.sources]
        if self.cited is not None:
            data["cited"] = self.cited
        return data


@dataclass(frozen=True)
class AnswerRule:
    """What the answer must be: exactly a text, contain one, or match a regular expression
    (Python syntax, searched anywhere in the answer)."""

    how: AnswerHow
    text: str

    def holds(self, answer: str) -> bool:
        if self.how == "exact":
            return answer == self.text
        if self.how == "contains":
            return self.text in answer
        return re.search(self.text, answer) is not None

    def describe(self) -> str:
        said = {"exact": "exactly", "contains": "containing", "pattern": "matching"}[self.how]
        return f"{said} {json.dumps(self.text, ensure_ascii=False)}"


@dataclass(frozen=True)
class GoldenQuestion:
    """One question and what must hold when it is asked again; a field left out is not
    checked."""

    question: str
    name: str
    """How reports and tests name it: given, else the question itself."""
    select: tuple[ExpectedEdge, ...] = ()
    select_only: bool = False
    """No edge other than those of `select` may be selected."""
    not_select: tuple[ox.Triple, ...] = ()
    cite: tuple[SourceMark, ...] = ()
    """Documents (optionally a page, a chunk) the answer must cite: a cited edge stated there."""
    answer: AnswerRule | None = None
    max_unselected_hops: int | None = None
    """How many retrieved edges that were not selected may lie between a seed entity of the
    question and a selected edge; 0: the selected edges reach the question's entities alone."""
    validation: Verdict | None = None
    """The session's record against the bundled shapes."""
    seeds: tuple[str, ...] | None = None
    """The entities grounding must find in the question, exactly."""

    def to_json(self) -> dict[str, Any]:
        """The entry as the file writes it, fields left out where they are not checked."""
        data: dict[str, Any] = {"question": self.question}
        if self.name != self.question:
            data["name"] = self.name
        if self.seeds is not None:
            data["seeds"] = list(self.seeds)
        if self.select:
            data["select"] = [edge.to_json() for edge in self.select]
        if self.select_only:
            data["select_only"] = True
        if self.not_select:
            data["not_select"] = [edge_json(edge) for edge in self.not_select]
        if self.cite:
            data["cite"] = [mark.to_json() for mark in self.cite]
        if self.answer is not None:
            data["answer"] = {self.answer.how: self.answer.text}
        if self.max_unselected_hops is not None:
            data["max_unselected_hops"] = self.max_unselected_hops
        if self.validation is not None:
            data["validation"] = self.validation
        return data


@dataclass(frozen=True)
class GoldenFile:
    questions: tuple[GoldenQuestion, ...]
    origin: str = "the golden file"

    def to_json(self) -> dict[str, Any]:
        return {"version": FORMAT_VERSION,
                "questions": [question.to_json() for question in self.questions]}

    def dump(self, format: Literal["yaml", "json"] = "yaml") -> str:
        data = self.to_json()
        if format == "json":
            return json.dumps(data, ensure_ascii=False, indent=2) + "\n"
        return yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)


def edge_json(edge: ox.Triple) -> dict[str, str]:
    """An edge as the file writes it: an IRI bare, any other term in N-Triples syntax."""
    return {"subject": _term_text(edge.subject), "predicate": _term_text(edge.predicate),
            "object": _term_text(edge.object)}


def _term_text(term: ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple) -> str:
    return term.value if isinstance(term, ox.NamedNode) else rdf_text(term)


def load_golden(path: Path) -> GoldenFile:
    """The golden file at `path`; GoldenError naming what is wrong and where."""
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            raise GoldenError(f"{path}: {size} bytes; a golden file may hold "
                              f"{MAX_FILE_BYTES} at most")
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise GoldenError(f"cannot read {path}: {error.strerror or error}") from None
    except UnicodeDecodeError as error:
        raise GoldenError(f"{path}: not UTF-8 text (byte {error.start})") from None
    return parse_golden(text, str(path), json_syntax=path.suffix.lower() == ".json")


def parse_golden(text: str, origin: str, *, json_syntax: bool = False) -> GoldenFile:
    """A golden file from its text; `origin` names it in errors."""
    try:
        data = json.loads(text) if json_syntax else yaml.safe_load(text)
    except json.JSONDecodeError as error:
        raise GoldenError(f"{origin}: not JSON: {error.msg} at line {error.lineno}, column "
                          f"{error.colno}") from None
    except yaml.YAMLError as error:
        raise GoldenError(f"{origin}: not YAML: {_yaml_problem(error)}") from None
    except RecursionError:
        raise GoldenError(f"{origin}: nested too deeply to be a golden file") from None
    return _file(data, origin)


def _yaml_problem(error: yaml.YAMLError) -> str:
    mark = getattr(error, "problem_mark", None)
    problem = getattr(error, "problem", None) or str(error)
    return f"{problem} at line {mark.line + 1}, column {mark.column + 1}" if mark else problem


def _file(data: Any, origin: str) -> GoldenFile:
    if not isinstance(data, dict):
        raise GoldenError(f"{origin}: expected a mapping with `questions`, found "
                          f"{_kind(data)}")
    _known(data, ("version", "questions"), origin)
    version = data.get("version", FORMAT_VERSION)
    if version != FORMAT_VERSION:
        raise GoldenError(f"{origin}: version {version!r}; this tgsparql reads version "
                          f"{FORMAT_VERSION}")
    entries = data.get("questions")
    if not isinstance(entries, list) or not entries:
        raise GoldenError(f"{origin}: `questions` must be a non-empty list of entries")
    questions = tuple(_question(entry, f"{origin}: question {number}")
                      for number, entry in enumerate(entries, 1))
    seen: dict[str, int] = {}
    for number, question in enumerate(questions, 1):
        if question.name in seen:
            raise GoldenError(f"{origin}: question {number} is named {question.name!r} like "
                              f"question {seen[question.name]}; give each a `name` of its own")
        seen[question.name] = number
    return GoldenFile(questions, origin)


_ENTRY_KEYS = ("question", "name", "seeds", "select", "select_only", "not_select", "cite",
               "answer", "max_unselected_hops", "validation")


def _question(entry: Any, where: str) -> GoldenQuestion:
    if not isinstance(entry, dict):
        raise GoldenError(f"{where}: expected a mapping with `question`, found {_kind(entry)}")
    text = entry.get("question")
    try:
        check_question(text)
    except QuestionError as error:
        raise GoldenError(f"{where}: `question`: {error}") from None
    where = f"{where} ({_short(entry.get('name') or text)})"
    _known(entry, _ENTRY_KEYS, where)
    name = entry.get("name", text)
    if not isinstance(name, str) or not name.strip():
        raise GoldenError(f"{where}: `name` must be non-empty text")
    return GoldenQuestion(
        question=text,
        name=name,
        select=_list(entry, "select", where, _expected_edge),
        select_only=_flag(entry, "select_only", where),
        not_select=_list(entry, "not_select", where, _edge),
        cite=_list(entry, "cite", where, _cited),
        answer=_answer(entry["answer"], f"{where}: `answer`") if "answer" in entry else None,
        max_unselected_hops=_hops(entry, where),
        validation=_verdict(entry, where),
        seeds=(_list(entry, "seeds", where, lambda item, at: _iri(item, at).value)
               if "seeds" in entry else None),
    )


def _list(entry: Mapping[str, Any], key: str, where: str,
          read: Callable[[Any, str], T]) -> tuple[T, ...]:
    items = entry.get(key, [])
    if not isinstance(items, list):
        raise GoldenError(f"{where}: `{key}` must be a list, not {_kind(items)}")
    return tuple(read(item, f"{where}: `{key}` item {index}")
                 for index, item in enumerate(items, 1))


def _flag(entry: Mapping[str, Any], key: str, where: str) -> bool:
    value = entry.get(key, False)
    if not isinstance(value, bool):
        raise GoldenError(f"{where}: `{key}` must be true or false, not {value!r}")
    return value


def _hops(entry: Mapping[str, Any], where: str) -> int | None:
    value = entry.get("max_unselected_hops")
    if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
        raise GoldenError(f"{where}: `max_unselected_hops` must be a whole number, 0 or more, "
                          f"not {value!r}")
    return value


def _verdict(entry: Mapping[str, Any], where: str) -> Verdict | None:
    value = entry.get("validation")
    if value is not None and value not in VERDICTS:
        raise GoldenError(f"{where}: `validation` must be one of {', '.join(VERDICTS)}, not "
                          f"{value!r}")
    return cast("Verdict | None", value)


def _answer(value: Any, where: str) -> AnswerRule:
    if not isinstance(value, dict) or len(value) != 1:
        raise GoldenError(f"{where}: expected one of `exact`, `contains` or `pattern` with a "
                          "text, as in `answer: {contains: Warsaw}`")
    how, text = next(iter(value.items()))
    if how not in ANSWER_HOWS:
        raise GoldenError(f"{where}: unknown rule `{how}`; use exact, contains or pattern")
    if not isinstance(text, str):
        raise GoldenError(f"{where}: `{how}` needs a text, not {_kind(text)}")
    if how == "pattern":
        try:
            re.compile(text)
        except re.error as error:
            raise GoldenError(f"{where}: `pattern` is not a regular expression: {error}") from None
    return AnswerRule(how, text)


def _expected_edge(item: Any, where: str) -> ExpectedEdge:
    edge = _edge(item, where)
    if not isinstance(item, dict):
        return ExpectedEdge(edge)
    sources = None
    if "sources" in item:
        sources = _list(item, "sources", where, _source)
    cited = item.get("cited")
    if cited is not None and not isinstance(cited, bool):
        raise GoldenError(f"{where}: `cited` must be true or false, not {cited!r}")
    return ExpectedEdge(edge, sources, cited)


def _edge(item: Any, where: str) -> ox.Triple:
    """An edge: a mapping of subject, predicate and object, or one N-Triples line."""
    if isinstance(item, str):
        line = item.strip()
        return _one_triple(line if line.endswith(".") else line + " .", where,
                           "an N-Triples triple").triple
    if not isinstance(item, dict):
        raise GoldenError(f"{where}: expected subject, predicate and object, or an N-Triples "
                          f"line, found {_kind(item)}")
    _known(item, ("subject", "predicate", "object", "sources", "cited"), where)
    terms = []
    for part in ("subject", "predicate", "object"):
        if part not in item:
            raise GoldenError(f"{where}: `{part}` is missing")
        terms.append(_term(item[part], f"{where}: `{part}`"))
    subject, predicate, object_ = terms
    if not isinstance(predicate, ox.NamedNode):
        raise GoldenError(f"{where}: `predicate` must be an IRI")
    if isinstance(subject, ox.Literal):
        raise GoldenError(f"{where}: `subject` cannot be a literal")
    return ox.Triple(subject, predicate, object_)


def _term(value: Any, where: str) -> ox.NamedNode | ox.BlankNode | ox.Literal | ox.Triple:
    """An IRI as it is, or any term in N-Triples syntax."""
    if not isinstance(value, str) or not value.strip():
        raise GoldenError(f"{where}: expected an IRI or an N-Triples term, found {_kind(value)}")
    text = value.strip()
    if not text.startswith(("<", '"', "_:")):
        return _iri(text, where)
    return _one_triple(_PROBE.format(text), where, f"an N-Triples term ({text!r})").object


def _one_triple(line: str, where: str, what: str) -> ox.Quad:
    """The one triple an N-Triples line holds; GoldenError saying it is not `what`."""
    try:
        parsed = list(ox.parse(input=line.encode(), format=ox.RdfFormat.N_TRIPLES))
    except SyntaxError as error:
        raise GoldenError(f"{where}: not {what}: {error}") from None
    if len(parsed) != 1:
        raise GoldenError(f"{where}: not {what}: it holds {len(parsed)} triples")
    return parsed[0]


def _iri(value: Any, where: str) -> ox.NamedNode:
    if not isinstance(value, str) or not _SCHEME.fullmatch(value.strip()):
        raise GoldenError(f"{where}: not an absolute IRI: {value!r} (a literal is written in "
                          "N-Triples syntax, in double quotes)")
    try:
        return ox.NamedNode(value.strip())
    except ValueError as error:
        raise GoldenError(f"{where}: not an IRI: {error}") from None


def _cited(item: Any, where: str) -> SourceMark:
    mark = _source(item, where)
    if mark.sentence is not None:
        raise GoldenError(f"{where}: a cited document takes `document`, `page` and `chunk`; "
                          "a sentence belongs to an edge's `sources`")
    return mark


def _source(item: Any, where: str) -> SourceMark:
    """A place: a document's IRI alone, or a mapping with `document` and optionally `page`,
    `chunk` and `sentence`."""
    if isinstance(item, str):
        return SourceMark(_iri(item, where).value)
    if not isinstance(item, dict):
        raise GoldenError(f"{where}: expected a document IRI or a mapping with `document`, "
                          f"found {_kind(item)}")
    _known(item, ("document", "page", "chunk", "sentence"), where)
    if "document" not in item:
        raise GoldenError(f"{where}: `document` is missing")
    numbers = []
    for key in ("page", "chunk"):
        number = item.get(key)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int)):
            raise GoldenError(f"{where}: `{key}` must be a whole number, not {number!r}")
        numbers.append(number)
    sentence = item.get("sentence")
    if sentence is not None and not isinstance(sentence, str):
        raise GoldenError(f"{where}: `sentence` must be text, not {_kind(sentence)}")
    return SourceMark(_iri(item["document"], f"{where}: `document`").value, *numbers, sentence)


def _known(data: Mapping[Any, Any], keys: Sequence[str], where: str) -> None:
    unknown = [key for key in data if key not in keys]
    if unknown:
        raise GoldenError(f"{where}: unknown key {unknown[0]!r}; the keys are "
                          + ", ".join(keys))


def _kind(value: Any) -> str:
    if value is None:
        return "nothing"
    return {dict: "a mapping", list: "a list", str: "text", bool: "true or false"}.get(
        type(value), type(value).__name__)


def _short(text: Any, limit: int = 60) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"
