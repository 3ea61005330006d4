"""The session page as HTML, from jinja2 templates in `templates/`: by itself for
`explain --format html`, and inside `tgsparql serve`, whose own pages extend the same
`base.html` (the server loads its templates before these).

Autoescaped; nothing on a page runs JavaScript. Only http and https IRIs become links out, so
no `javascript:` IRI in the data is one.
"""

from __future__ import annotations

import re
from functools import cache

import jinja2

from tgsparql.record.picture import LINE_HEIGHT, NODE_WIDTH
from tgsparql.record.session_view import SessionView, highlight

_WEB_LINK = re.compile(r"https?://", re.IGNORECASE)


def environment(*loaders: jinja2.BaseLoader) -> jinja2.Environment:
    """The pages' environment: templates from `loaders` first, then the record's."""
    built = jinja2.Environment(
        loader=jinja2.ChoiceLoader([*loaders, jinja2.PackageLoader("tgsparql.record",
                                                                   "templates")]),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
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
