"""VideoARM: a controller over a hierarchical multimodal memory with three tools, one of them listening (paper 003)."""
