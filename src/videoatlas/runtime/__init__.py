"""What every agent's nodes run on: the runtime context, the shared budget, model calls, node tracing."""
