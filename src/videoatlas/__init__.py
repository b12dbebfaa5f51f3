"""videoatlas: question answering over very long videos by navigating a hierarchical frame grid."""

__version__ = "0.1.0"
