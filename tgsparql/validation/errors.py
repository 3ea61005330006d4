"""The errors validation raises: of the shapes graph (reader, compiler), and a failure a
SHACL-SPARQL query reports."""


class ShapesError(ValueError):
    """The shapes graph cannot be read or uses a feature the validator does not support."""


class ValidationFailure(ShapesError):
    """A SHACL-SPARQL query reported a failure (a solution binds ?failure to true, SHACL §5.3):
    the data could not be validated, so no report says it conforms."""
