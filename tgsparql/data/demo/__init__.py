"""The demo sample: a small knowledge graph about the Curies, with its sources."""
