"""GenAI names as the conventions' own files define them, copied by hand, so that a test compares the
package's names (``otel_toolcalls._core.names``) with the conventions rather than with themselves.

Source: the repository open-telemetry/semantic-conventions-genai (the GenAI conventions moved there
from open-telemetry/semantic-conventions, whose docs/gen-ai/README.md now only points to it):

- docs/gen-ai/client-inference.md and model/gen-ai/metrics.yaml at commit
  024a4f944a1291fcb627c9c47da69e79868dd15e: the inference span's attributes (usage attributes
  included), ``gen_ai.client.inference.duration`` and ``.time_to_first_chunk`` (histograms, ``s``,
  advised buckets), the older ``gen_ai.client.operation.duration`` (not for inference operations),
  the well-known ``gen_ai.provider.name`` and ``gen_ai.operation.name`` values;
- model/gen-ai/token-metrics.yaml and docs/gen-ai/gen-ai-token-metrics.md at commit
  066d4a7f356f8600de6f10c42874626ab88692fb: the ``gen_ai.client.inference.usage.*`` counters
  (``{token}``) and their required ``gen_ai.token.modality`` (``unknown`` when not broken down).
"""

from __future__ import annotations

# Span attributes.
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
REQUEST_MODEL = "gen_ai.request.model"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_ID = "gen_ai.response.id"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.usage.cache_write.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
USAGE_ATTRIBUTES = (
    USAGE_INPUT_TOKENS,
    USAGE_OUTPUT_TOKENS,
    USAGE_CACHE_READ_INPUT_TOKENS,
    USAGE_CACHE_WRITE_INPUT_TOKENS,
    USAGE_REASONING_OUTPUT_TOKENS,
)
TOKEN_MODALITY = "gen_ai.token.modality"
TOKEN_MODALITY_UNKNOWN = "unknown"

# Metrics: name -> (instrument, unit).
INFERENCE_DURATION = "gen_ai.client.inference.duration"
OPERATION_DURATION = "gen_ai.client.operation.duration"
TIME_TO_FIRST_CHUNK = "gen_ai.client.inference.time_to_first_chunk"
USAGE_INPUT = "gen_ai.client.inference.usage.input_tokens"
USAGE_OUTPUT = "gen_ai.client.inference.usage.output_tokens"
USAGE_CACHE_READ = "gen_ai.client.inference.usage.cache_read.input_tokens"
USAGE_CACHE_WRITE = "gen_ai.client.inference.usage.cache_write.input_tokens"
USAGE_REASONING = "gen_ai.client.inference.usage.reasoning.output_tokens"
METRICS = {
    INFERENCE_DURATION: ("histogram", "s"),
    OPERATION_DURATION: ("histogram", "s"),
    TIME_TO_FIRST_CHUNK: ("histogram", "s"),
    USAGE_INPUT: ("counter", "{token}"),
    USAGE_OUTPUT: ("counter", "{token}"),
    USAGE_CACHE_READ: ("counter", "{token}"),
    USAGE_CACHE_WRITE: ("counter", "{token}"),
    USAGE_REASONING: ("counter", "{token}"),
}
# "This metric SHOULD be specified with ExplicitBucketBoundaries of [...]" (duration and TTFC).
SECONDS_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
# metric_attributes.gen_ai: required, conditionally required (request model if available, port if
# the address is set), recommended.
METRIC_REQUIRED = (OPERATION_NAME, PROVIDER_NAME)
METRIC_ATTRIBUTES = {
    OPERATION_NAME,
    PROVIDER_NAME,
    REQUEST_MODEL,
    SERVER_PORT,
    RESPONSE_MODEL,
    SERVER_ADDRESS,
}

# Well-known values.
PROVIDERS = {
    "anthropic",
    "aws.bedrock",
    "azure.ai.inference",
    "azure.ai.openai",
    "cohere",
    "deepseek",
    "gcp.gemini",
    "gcp.gen_ai",
    "gcp.vertex_ai",
    "groq",
    "ibm.watsonx.ai",
    "mistral_ai",
    "moonshot_ai",
    "openai",
    "perplexity",
    "x_ai",
}
OPERATIONS = {
    "chat",
    "create_agent",
    "create_memory",
    "create_memory_store",
    "delete_memory",
    "delete_memory_store",
    "embeddings",
    "execute_tool",
    "fetch_response",
    "generate_content",
    "invoke_agent",
    "invoke_workflow",
    "plan",
    "retrieval",
    "search_memory",
    "text_completion",
    "update_memory",
    "upsert_memory",
}
