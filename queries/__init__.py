"""The SPARQL templates of tgsparql, shipped inside the package as `tgsparql.queries`."""
