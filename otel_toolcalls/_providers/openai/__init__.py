"""OpenAI: Chat Completions and Responses over HTTP, Realtime and Responses over WebSocket."""
