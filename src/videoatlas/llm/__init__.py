"""The one door to the VLM server: settings, the chat model, structured calls, accounting, the endpoint's other routes.

Structured calls with retries and repair (:mod:`.client`), what each cost (:mod:`.records`), waiting out an
endpoint that is down (:mod:`.outage`), the embeddings and speech-to-text clients (:mod:`.embeddings`,
:mod:`.transcribe`), and the vLLM presets of ``videoatlas serve`` (:mod:`.serve`).
"""
