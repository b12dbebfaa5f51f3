"""Video-RLM's nodes, one module each, named by what they do."""
