"""Test tools for pipelines built on tgsparql: a pytest plugin, hypothesis strategies, fakes.

Nothing here is imported by the package itself; `strategies` needs hypothesis, the rest only
pytest (for the plugin) or nothing at all.
"""

from tgsparql.testing.assertions import NonConformance, assert_conforms

__all__ = ["NonConformance", "assert_conforms"]
