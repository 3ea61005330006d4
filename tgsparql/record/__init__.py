"""The record read back: sessions explained, edges traced to their sources, the session's
page, picture and text, sessions validated, deleted and migrated.

The rule of this wing: it reads (and keeps) what `tgsparql.asking` wrote, and knows no server:
the pages of `tgsparql serve` and the commands of the CLI show what this wing builds.
"""
