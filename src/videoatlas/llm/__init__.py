"""The one door to the VLM server: settings, the chat model, structured calls, accounting."""
