"""Video-RLM: a Master coordinating Workers that explore the VideoAtlas grid hierarchy (paper 000)."""
