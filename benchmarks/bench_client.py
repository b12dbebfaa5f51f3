"""Client + stand-in overhead per structured call at zero latency, and calls per second at concurrency 16.

The stand-in runs as its own process (``videoatlas standin``), as a real server would, with
no added latency. Two payloads: a text-only prompt, and a prompt carrying one 2560 x 2560 grid
JPEG (the stand-in's OCR of that image is cached after the first call, so what is measured is the
protocol: base64, HTTP, JPEG decode, hashing, token and prefix-cache accounting, validation).

Usage: python benchmarks/bench_client.py [--calls 200] [--concurrency 16]
"""

from __future__ import annotations

import argparse
import asyncio
import io
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx
from pydantic import BaseModel, Field

from videoatlas.llm.chat_model import OpenAICompatibleChat
from videoatlas.llm.client import VLMClient
from videoatlas.llm.images import ImagePart
from videoatlas.llm.settings import EndpointSettings
from videoatlas.logging import configure_logging
from videoatlas_standin.version import STANDIN_MODEL


class Pick(BaseModel):
    cells: list[int] = Field(min_length=1, max_length=4)
    reason: str


QUESTION = "Question: Which code is shown during the REEFS chapter?\nA. QU-8424\nB. KX-1234\nC. ZZ-9999\n"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def grid_image() -> ImagePart:
    from videoatlas.environment.atlas import VideoAtlas
    from videoatlas.environment.frames import FrameSource
    from videoatlas.synth import SynthSpec, synthesize

    out = Path("bench-data/client")
    if not (out / "video.mp4").is_file():
        synthesize(SynthSpec(duration=600, seed=7), out)
    with FrameSource(out / "video.mp4") as src:
        jpeg = VideoAtlas(src).grid().image.jpeg
    from PIL import Image

    assert Image.open(io.BytesIO(jpeg)).size == (2560, 2560)
    return ImagePart.from_jpeg(jpeg, "root grid")


async def run(base_url: str, calls: int, concurrency: int, images: list[ImagePart]) -> dict[str, float]:
    settings = EndpointSettings(base_url=base_url, model=STANDIN_MODEL, max_concurrency=concurrency)
    client = VLMClient(OpenAICompatibleChat(settings=settings), settings)
    await client.ask(Pick, system="Pick cells.", text=QUESTION, images=images)  # warm: OCR cache, connections
    latencies: list[float] = []

    async def one(i: int) -> None:
        began = time.perf_counter()
        await client.ask(Pick, system="Pick cells.", text=QUESTION + f"(call {i})", images=images)
        latencies.append(time.perf_counter() - began)

    began = time.perf_counter()
    if concurrency == 1:
        for i in range(calls):
            await one(i)
    else:
        await asyncio.gather(*(one(i) for i in range(calls)))
    wall = time.perf_counter() - began
    return {
        "calls": calls,
        "concurrency": concurrency,
        "median_ms": statistics.median(latencies) * 1000,
        "p95_ms": sorted(latencies)[int(0.95 * len(latencies)) - 1] * 1000,
        "calls_per_s": calls / wall,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    configure_logging("warning")
    port = free_port()
    exe = str(Path(sys.executable).parent / "videoatlas")
    server = subprocess.Popen([exe, "standin", "--port", str(port)], stderr=subprocess.DEVNULL)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(100):
            try:
                httpx.get(base_url + "/models", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        image = grid_image()
        for label, images in (("text only", []), ("one 2560x2560 grid", [image])):
            for concurrency in (1, args.concurrency):
                n = args.calls if images == [] else max(40, args.calls // 4)
                result = asyncio.run(run(base_url, n, concurrency, images))
                sys.stdout.write(
                    f"{label:<20} concurrency {concurrency:>2}: median {result['median_ms']:7.1f} ms  "
                    f"p95 {result['p95_ms']:7.1f} ms  {result['calls_per_s']:7.1f} calls/s  ({n} calls)\n"
                )
                sys.stdout.flush()
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
