"""SHACL shapes of tgsparql, shipped inside the package as `tgsparql.shapes`."""
