"""Video-RLM's state: the Master's, a Worker's, and the records they keep."""
