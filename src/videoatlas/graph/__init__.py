"""Wiring of the Video-RLM graphs (no node logic lives here)."""
