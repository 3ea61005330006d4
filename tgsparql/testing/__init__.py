"""Test tools for pipelines built on tgsparql: a pytest plugin, hypothesis strategies, fakes.

Nothing here is imported by the package itself; `strategies` needs hypothesis, the rest only
pytest (for the plugin) or nothing at all.

The rule of this face: it may use every wing but `cli` and `serve`; nothing of the package imports
it.
"""

from tgsparql.testing.assertions import NonConformance, assert_conforms

__all__ = ["NonConformance", "assert_conforms"]
