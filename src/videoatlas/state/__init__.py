"""Typed state of the Video-RLM graphs: data only (no clients, no images), with reducers for parallel writes."""
