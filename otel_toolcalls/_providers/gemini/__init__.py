"""Google Gemini (google-genai): streamed chunks and automatic function calling."""
