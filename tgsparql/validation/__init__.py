"""SHACL validation compiled to SPARQL and run on the store itself."""

from tgsparql.validation.errors import ShapesError
from tgsparql.validation.report import ValidationReport, ValidationResult
from tgsparql.validation.shapes import Shapes
from tgsparql.validation.validator import Validator

__all__ = ["Shapes", "ShapesError", "ValidationReport", "ValidationResult", "Validator"]
