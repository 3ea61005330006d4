"""The record read back: sessions explained, edges traced to their sources, the session's
page, picture and text, sessions validated, deleted and migrated, golden questions asked again
and compared with what they recorded.

The rule of this wing: it reads (and keeps) what `tgsparql.asking` wrote, asking again only
through `tgsparql.asking`'s pipeline, and knows no server: the pages of `tgsparql serve` and the
commands of the CLI show what this wing builds.
"""
