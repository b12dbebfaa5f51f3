"""Where runs live: LangGraph checkpoints (resume) and the run/trace store (inspect), in one database."""
