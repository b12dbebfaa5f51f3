"""The agents served by the LangGraph Agent Server (``langgraph.json`` at the project's root)."""
