"""The one error a shapes graph raises, shared by the reader and the compiler."""


class ShapesError(ValueError):
    """The shapes graph cannot be read or uses a feature the validator does not support."""
