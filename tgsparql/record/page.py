"""The session page as HTML, from jinja2 templates in `templates/`: by itself for
`explain --format html`, and inside `tgsparql serve`, whose own pages extend the same
`base.html` (the server loads its templates before these).

Autoescaped; nothing on a page runs JavaScript. Only http and https IRIs become links out, so
no `javascript:` IRI in the data is one. Text that holds bidi controls is printed as an isolate
(`isolated`), so an override in a label or an answer cannot turn the page's text around it.
"""

from __future__ import annotations

import re
from functools import cache

import jinja2
from markupsafe import Markup

from tgsparql.record.picture import LINE_HEIGHT, NODE_WIDTH
from tgsparql.record.session_view import SessionView, highlight
from tgsparql.record.terminal import BIDI_CONTROLS

_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)
_BIDI_CONTROL = re.compile(f"[{BIDI_CONTROLS}]")
_ISOLATE_OPENERS = frozenset("\u2066\u2067\u2068")  # LRI, RLI, FSI
FSI, PDI = "\u2068", "\u2069"


def isolated(text: str) -> str:
    """`text` as one bidi isolate (FSI … PDI) when it holds bidi controls, else as it is.

    The closing PDI ends every embedding and override opened inside it (Unicode bidi rule X6a);
    a PDI of the text's own with no isolate of its own to close is dropped, so it cannot end
    ours early, and the text's isolates left open are closed before ours."""
    if not _BIDI_CONTROL.search(text):
        return text
    kept: list[str] = []
    depth = 0
    for char in text:
        if char in _ISOLATE_OPENERS:
            depth += 1
        elif char == PDI:
            if depth == 0:
                continue
            depth -= 1
        kept.append(char)
    return FSI + "".join(kept) + PDI * depth + PDI


def _printed(value: object) -> object:
    """What a template prints: a text of the data's as an isolate; markup, already made of
    printed parts, as it is."""
    return isolated(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def environment(*loaders: jinja2.BaseLoader) -> jinja2.Environment:
    """The pages' environment: templates from `loaders` first, then the record's."""
    built = jinja2.Environment(
        loader=jinja2.ChoiceLoader([*loaders, jinja2.PackageLoader("tgsparql.record",
                                                                   "templates")]),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=_printed,
    )
    built.tests["web_link"] = lambda iri: bool(_WEB_LINK.match(iri))
    built.filters["highlight"] = highlight
    return built


def render_session(view: SessionView, within: jinja2.Environment | None = None) -> str:
    """The session's page. Rendered `within` the server's environment it links the server's
    pages; without one it stands alone (`explain --format html`): no navigation, no link but
    those out to http and https IRIs."""
    return (within or _standalone()).get_template("session.html").render(
        view=view, e=view.explanation, node_width=NODE_WIDTH, line_height=LINE_HEIGHT,
        standalone=within is None,
    )


@cache
def _standalone() -> jinja2.Environment:
    return environment()
