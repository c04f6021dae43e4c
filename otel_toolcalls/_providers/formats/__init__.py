"""Translators of wire formats that more than one SDK speaks (Chat Completions, Anthropic Messages,
OpenAI Responses): an event in, ``Sink`` calls out."""
