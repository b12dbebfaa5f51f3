"""What every agent's nodes run on: run configuration, the runtime context, the budget, model calls, node tracing.

Also stopping between steps (:mod:`.stopping`) and a video's frame embedding index (:mod:`.frame_index`).
"""
