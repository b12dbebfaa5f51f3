"""Where runs live, in one database: LangGraph checkpoints (resume), the run/trace store (inspect), frame indexes."""
