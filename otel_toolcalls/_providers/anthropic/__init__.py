"""Anthropic Messages (its format, shared with Bedrock InvokeModel, is in ``formats/``)."""
