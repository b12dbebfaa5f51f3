"""The Video-RLM nodes, one module each, named by what they do."""
