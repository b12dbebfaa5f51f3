"""The ``lmms_eval.models`` entry point: lmms-eval 0.7's registry learns the ``videoatlas`` model from it."""

from __future__ import annotations

from typing import Any

MODEL_ID = "videoatlas"


def manifest() -> Any:
    """The model's manifest (a ``ModelManifest``; lmms-eval imports the class only when the model is asked for)."""
    from lmms_eval.models.registry_v2 import ModelManifest

    return ModelManifest(model_id=MODEL_ID, simple_class_path="videoatlas.lmms.model.VideoAtlasModel")
