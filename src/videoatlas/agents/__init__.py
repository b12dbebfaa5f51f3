"""The agents, one package each (``video_rlm``, ``uniform``...), and the registry that names them."""
