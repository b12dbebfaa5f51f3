"""Images as the model receives them: JPEG bytes sent as data URLs, with the server's limits checked first."""

from __future__ import annotations

import base64
import hashlib
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass

from PIL import Image

from videoatlas.errors import ImageLimitError
from videoatlas.llm.settings import EndpointSettings

MERGED_PATCH_PX = {"qwen3": 32}
"""The side in pixels of one image token after the vision encoder's patch merge, by model family (lower-case
prefix of the served model's name, without its organisation): Qwen3-VL and Qwen3.5 use 16 px patches merged
2 x 2; any other model is counted as Qwen2-VL and Qwen2.5-VL are, 14 px patches merged 2 x 2."""
DEFAULT_MERGED_PATCH_PX = 28


def merged_patch_px(model: str) -> int:
    """The side in pixels of one image token for ``model`` (the served model id, e.g. ``Qwen/Qwen3-VL-8B``)."""
    name = model.rsplit("/", 1)[-1].lower()
    return next((px for prefix, px in MERGED_PATCH_PX.items() if name.startswith(prefix)), DEFAULT_MERGED_PATCH_PX)


MIN_IMAGE_TOKENS = {28: 4, 32: 64}
"""The fewest tokens the Qwen image processors resize an image to, by token side: Qwen2.5-VL's ``min_pixels``
(3,136 px, 4 tokens of 28 px) and Qwen3-VL's (65,536 px, 64 tokens of 32 px); 4 for any other side."""
MAX_IMAGE_TOKENS = 16384
"""The most tokens they resize an image to (Qwen2.5-VL: 12,845,056 px; Qwen3-VL: 16,777,216 px)."""


def image_tokens(width: int, height: int, patch_px: int = DEFAULT_MERGED_PATCH_PX) -> int:
    """The prompt tokens one image of ``width`` x ``height`` takes: one per merged patch after the resize.

    The Qwen-VL image processors resize an image to whole patches before the vision encoder sees it: each
    side to the nearest multiple of the patch (halves to even, as Python rounds), then, if that is above
    the most pixels it takes or below the fewest, both sides scaled by the same factor (rounded down or up
    to whole patches). vLLM counts exactly these tokens (checked against it: ``make conformance``). The
    server's usage counts image and text tokens together; this splits them for the cost report. The two
    tokens that mark each image's start and end are text tokens here.
    """
    lowest = MIN_IMAGE_TOKENS.get(patch_px, 4) * patch_px * patch_px
    highest = MAX_IMAGE_TOKENS * patch_px * patch_px
    h, w = round(height / patch_px) * patch_px, round(width / patch_px) * patch_px
    if h * w > highest:
        scale = math.sqrt(height * width / highest)
        h = max(patch_px, math.floor(height / scale / patch_px) * patch_px)
        w = max(patch_px, math.floor(width / scale / patch_px) * patch_px)
    elif h * w < lowest:
        scale = math.sqrt(lowest / (height * width))
        h, w = math.ceil(height * scale / patch_px) * patch_px, math.ceil(width * scale / patch_px) * patch_px
    return (h // patch_px) * (w // patch_px)


@dataclass(frozen=True, slots=True)
class ImagePart:
    """One JPEG image for a prompt."""

    jpeg: bytes
    width: int
    height: int
    label: str = ""
    """What the image is (for traces): 'root grid', 'cell 12/5', 'scratchpad p1'..."""
    frames: tuple[float, ...] = ()
    """The video times (seconds) of the frames the image shows: the run's frame ledger counts them."""

    @classmethod
    def from_jpeg(cls, jpeg: bytes, label: str = "") -> ImagePart:
        """Read the size from the bytes."""
        with Image.open(io.BytesIO(jpeg)) as img:
            return cls(jpeg, img.width, img.height, label)

    @property
    def pixels(self) -> int:
        """Width x height."""
        return self.width * self.height

    @property
    def sha256(self) -> str:
        """Content hash (what a prefix cache keys images by)."""
        return hashlib.sha256(self.jpeg).hexdigest()

    def data_url(self) -> str:
        """``data:image/jpeg;base64,...``."""
        return "data:image/jpeg;base64," + base64.b64encode(self.jpeg).decode("ascii")


RAISE_IMAGE_LIMIT = "raise vLLM's --limit-mm-per-prompt and videoatlas' --max-images together"
"""How to let more images into one prompt: the server's limit and the client's, as one."""


def check_limits(images: Sequence[ImagePart], settings: EndpointSettings) -> None:
    """Refuse, before sending, a prompt the server would reject for its images."""
    if len(images) > settings.max_images:
        raise ImageLimitError(
            f"{len(images)} images in one prompt exceed the server's limit of {settings.max_images} "
            f"({RAISE_IMAGE_LIMIT})"
        )
    for image in images:
        if image.pixels > settings.max_image_pixels:
            raise ImageLimitError(
                f"image {image.label or image.sha256[:12]} is {image.width}x{image.height} "
                f"= {image.pixels:,} px, over the server's {settings.max_image_pixels:,} px per image; "
                "use smaller cells or a smaller K"
            )
