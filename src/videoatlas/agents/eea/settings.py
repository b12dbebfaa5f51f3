"""EEA's own settings: the paper's values where it gives them, a stated default where it leaves one open."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field, model_validator

from videoatlas.runtime.config import StopsOnConfidence, settings_reader


class EEASettings(StopsOnConfidence):
    """How EEA searches (every value is part of the run's settings and its results' key)."""

    thinking_roles: ClassVar[tuple[str, ...]] = ("searcher",)

    expand_frames: int = Field(default=6, ge=1, le=16)
    """B: frames sampled in the segment being expanded, which split it into B + 1 children (the paper: 6 on
    LVBench, 4 on EgoSchema)."""
    anchors: int = Field(default=3, ge=0, le=16)
    """B_s: of those frames, how many are the segment's best semantic anchors (the paper: 3; 0 turns
    semantic-guided expansion off: every frame then goes to coverage). Two taken are more than twice
    cluster_gap_s apart, in clips that do not neighbour (not in the paper); a slot no such anchor fills goes to
    coverage."""
    memory_frames: int = Field(default=16, ge=1, le=64)
    """Frames the memory keeps; past that the lowest-reward ones are evicted (the paper: 16 on LVBench, 8 on
    EgoSchema)."""
    expansions: int = Field(default=6, ge=1, le=50)
    """Rounds at most (expand, evaluate, update, select); then the answer is forced (the paper gives no cap)."""
    uarf: bool = True
    """Fuse the VLM's reward with the anchors' query score (false: the selection sees the VLM's reward alone)."""
    query_update: bool = True
    """Propose new queries from each round's frames and re-anchor (false: the first queries stay)."""
    update_call: bool = True
    """Ask for a round's new queries in a call of their own, as the paper does (true), or in the expansion's call,
    which is shown the same frames (false: the frames are read, and prefilled, once a round, one call fewer; the
    queries' rules are the paper's, but the call also shows the search so far)."""
    tau: float = Field(default=0.1, gt=0.0, le=10.0)
    """tau_c, the temperature of the query score's log-mean-exp over a segment's anchors (the paper: 0.1)."""
    entropy_temperature: float = Field(default=0.1, gt=0.0, le=10.0)
    """Temperature of the softmax over the candidates' rewards (scaled 0-1) whose normalised entropy weighs
    the fusion (open in the paper)."""
    empty_score: float = Field(default=0.0, ge=-1.0, le=1.0)
    """The query score of a segment with no anchor in it (open in the paper)."""
    top_k: int = Field(default=8, ge=1, le=256)
    """Clips retrieved per query (open in the paper): the best clusters in time of its best index frames, as many
    frames as that many clips of cluster_gap_s hold."""
    cluster_gap_s: float = Field(default=10.0, ge=0.0, le=3600.0)
    """Retrieved frames closer than this in time form one cluster, whose best frame is an anchor (open)."""
    index_fps: float = Field(default=1.0, gt=0.0, le=30.0)
    """Frames per second of video the embedding index holds (open in the paper); lowered to fit index_cap."""
    index_cap: int = Field(default=4000, ge=1, le=100_000)
    """Frames the index holds at most: a longer video is indexed at index_cap / duration frames per second
    instead (the run records the rate used)."""
    speech_index_chunks: int = Field(default=240, ge=0, le=100_000)
    """Chunks of the speech track (30 s each) heard at the start and matched against the queries, as the frame
    index is: every chunk of a video up to two hours, that many spread evenly over a longer one (0: only what a
    first look at the whole video hears, its middle chunk). Not in the paper, which has no sound."""
    index_px: int = Field(default=448, ge=64, le=2048)
    """Long side of a frame sent to the embedding model, in pixels."""
    embedding_model: str = ""
    """The embedding model on the embeddings endpoint (empty: the chat model's id, for a server that serves both)."""
    query_prefix: str = "query: "
    """Put before each query sent to the embedding model (E5 models expect ``query: ``)."""
    frame_px: int = Field(default=256, ge=64, le=1024)
    """Short side of the frames the VLM is shown, in pixels: each round's frames, and the memory at the answer."""

    @model_validator(mode="after")
    def _anchors_within_frames(self) -> EEASettings:
        if self.anchors > self.expand_frames:
            raise ValueError(f"anchors ({self.anchors}) cannot exceed expand_frames ({self.expand_frames})")
        return self


eea = settings_reader(EEASettings)
"""The run's EEA settings."""


Settings = EEASettings
"""The name every agent's settings module gives its settings model."""
