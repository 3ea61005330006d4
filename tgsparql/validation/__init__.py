"""SHACL validation compiled to SPARQL and run on the store itself.

The rule of this wing: it is the SHACL engine only. It knows nothing of sessions, questions or
collections (validating one session is `tgsparql.record.conformance`); it uses only
`tgsparql.stores` and `tgsparql.rdf`.
"""

from tgsparql.validation.errors import ShapesError, ValidationFailure
from tgsparql.validation.report import ValidationReport, ValidationResult
from tgsparql.validation.shapes import Shapes
from tgsparql.validation.validator import Validator

__all__ = [
    "Shapes", "ShapesError", "ValidationFailure", "ValidationReport", "ValidationResult",
    "Validator",
]
