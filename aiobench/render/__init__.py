"""Renderers: turn the result model into text or JSON; they never import the engine."""
