"""State every agent shares: data only (no clients, no images), with reducers for parallel writes.

:mod:`.models`: evidence, frame references, costs, repairs and their reducers; :mod:`.run`: what every
agent's graph takes in and gives back; :mod:`.schemas`: reply-schema helpers and the one final-decision
schema; :mod:`.portable`: the JSON-schema keywords every vLLM structured-output backend enforces. An
agent's own state lives in its package (``agents/<name>/state.py``).
"""
