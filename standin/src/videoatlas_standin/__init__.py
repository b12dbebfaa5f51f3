"""The STAND-IN VLM: an OpenAI-compatible test and demo backend that reads pixels with OCR. Not a VLM."""
