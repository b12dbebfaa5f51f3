"""EEA: anchors from a frame embedding index, semantic-guided tree search, uncertainty-aware reward fusion.

Paper 001; query discovery and updates, semantic-guided expansion and the fused rewards follow it.
"""
