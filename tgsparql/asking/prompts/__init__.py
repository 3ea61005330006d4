"""Prompt templates for the LLM backends."""
