"""Evaluations: benchmark adapters, a synthetic suite, long variants, a resumable runner, and reports."""
