"""Every name the package emits, as docs/TELEMETRY.md fixes it.

Names the GenAI semantic conventions define are spelled as they define them; the rest lives in
the package's own ``toolcall.*`` namespace. Tests and the collector config import from here.
"""

from __future__ import annotations

# GenAI semantic-convention attributes.
GEN_AI_OPERATION_NAME = "gen_ai.operation.name"
GEN_AI_PROVIDER_NAME = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_REQUEST_STREAM = "gen_ai.request.stream"
GEN_AI_RESPONSE_ID = "gen_ai.response.id"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
GEN_AI_TOOL_CALL_ID = "gen_ai.tool.call.id"
GEN_AI_TOOL_TYPE = "gen_ai.tool.type"
GEN_AI_TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
GEN_AI_ATTRIBUTION_LINK_TYPE = "gen_ai.attribution.link_type"
# Token usage on the inference span (client-inference.md of open-telemetry/semantic-conventions-genai).
GEN_AI_USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.usage.cache_write.input_tokens"
GEN_AI_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
GEN_AI_TOKEN_MODALITY = "gen_ai.token.modality"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
# Where the package itself failed (toolcall.internal_errors): a code location, a bounded set.
ERROR_SITE = "error.site"

# The package's own attributes.
# The tool-call span's name, id, type and request model: the block is the model *emitting* a call,
# and viewers (Phoenix, Jaeger UI, Langfuse) read a span with gen_ai.tool.name or gen_ai.tool.call.id
# as a tool execution, and one with gen_ai.request.model as an LLM call. The execute_tool span and
# the metrics keep the conventions' names.
TOOLCALL_TOOL_NAME = "toolcall.tool.name"
TOOLCALL_CALL_ID = "toolcall.call.id"
TOOLCALL_TOOL_TYPE = "toolcall.tool.type"
TOOLCALL_REQUEST_MODEL = "toolcall.request.model"
TOOLCALL_INDEX = "toolcall.index"
TOOLCALL_ARGUMENTS_DELTAS = "toolcall.arguments.deltas"
TOOLCALL_ARGUMENTS_SIZE = "toolcall.arguments.size"
TOOLCALL_OUTCOME = "toolcall.outcome"
TOOLCALL_ABORT_REASON = "toolcall.abort_reason"
TOOLCALL_COUNT = "toolcall.count"
TOOLCALL_REPLAYED_ABORTED = "toolcall.replayed_aborted"
TOOLCALL_STREAM_BUFFERED = "toolcall.stream.buffered"

# Span names and operation values.
TOOL_CALL_SPAN_PREFIX = "tool_call "
EXECUTE_TOOL_SPAN_PREFIX = "execute_tool "
OPERATION_EXECUTE_TOOL = "execute_tool"
INFERENCE_OPERATIONS = frozenset({"chat", "generate_content", "text_completion"})
# Streams a stored response again without inference (OpenAI ``responses.retrieve(stream=True)``).
OPERATION_FETCH_RESPONSE = "fetch_response"
# Providers' usage never breaks down by modality in the streams read here.
TOKEN_MODALITY_UNKNOWN = "unknown"
LINK_TYPE_CAUSED_BY_GENERATION = "CAUSED_BY_GENERATION"

# Events.
EVENT_REPLAYED_ABORTED = "toolcall.replayed_aborted"

# Metrics.
METRIC_TOOLCALL_CALLS = "toolcall.calls"
METRIC_TOOLCALL_DURATION = "toolcall.duration"
METRIC_TOOLCALL_ARGUMENTS_SIZE = "toolcall.arguments.size"
METRIC_TOOLCALL_ARGUMENTS_DELTAS = "toolcall.arguments.deltas"
METRIC_EXECUTE_TOOL_DURATION = "gen_ai.execute_tool.duration"
METRIC_TIME_TO_FIRST_CHUNK = "gen_ai.client.inference.time_to_first_chunk"
METRIC_INFERENCE_DURATION = "gen_ai.client.inference.duration"
# For operations that are not inference (fetch_response): the conventions keep the older name.
METRIC_OPERATION_DURATION = "gen_ai.client.operation.duration"
METRIC_USAGE_INPUT_TOKENS = "gen_ai.client.inference.usage.input_tokens"
METRIC_USAGE_OUTPUT_TOKENS = "gen_ai.client.inference.usage.output_tokens"
METRIC_USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.client.inference.usage.cache_read.input_tokens"
METRIC_USAGE_CACHE_WRITE_INPUT_TOKENS = "gen_ai.client.inference.usage.cache_write.input_tokens"
METRIC_USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.client.inference.usage.reasoning.output_tokens"
METRIC_TOOLCALL_REPLAYED_ABORTED = "toolcall.replayed_aborted"
METRIC_TOOLCALL_STREAM_BUFFERED = "toolcall.stream.buffered"
METRIC_TOOLCALL_INTERNAL_ERRORS = "toolcall.internal_errors"

# Outcomes.
COMPLETED = "completed"
ABORTED = "aborted"
UNKNOWN = "unknown"

# Abort reasons.
STREAM_ERROR = "stream_error"
CLOSED = "closed"
CANCELLED = "cancelled"
ABANDONED = "abandoned"
TRUNCATED = "truncated"
FILTERED = "filtered"
MALFORMED = "malformed"
INCOMPLETE = "incomplete"
UNTERMINATED = "unterminated"
ABORT_REASONS = (
    STREAM_ERROR,
    CLOSED,
    CANCELLED,
    ABANDONED,
    TRUNCATED,
    FILTERED,
    MALFORMED,
    INCOMPLETE,
    UNTERMINATED,
)

# Tool types.
TOOL_TYPE_FUNCTION = "function"
TOOL_TYPE_EXTENSION = "extension"

OTHER = "_OTHER"

# Cuts.
MAX_NAME_LENGTH = 256
MAX_ARGUMENTS_LENGTH = 4096

ABORT_DESCRIPTIONS = {
    STREAM_ERROR: "tool call aborted: the stream failed before the call completed",
    CLOSED: "tool call aborted: stream closed before the call completed",
    CANCELLED: (
        "tool call aborted: the consuming task or the response was cancelled before the call"
        " completed, or the server cancelled the call"
    ),
    ABANDONED: "tool call aborted: the stream was abandoned before the call completed",
    TRUNCATED: "tool call aborted: the model hit its output limit before the call completed",
    FILTERED: "tool call aborted: a content filter ended the response before the call completed",
    MALFORMED: "tool call aborted: the provider flagged the call as malformed",
    INCOMPLETE: "tool call aborted: the stream ended without the call's completion event",
    UNTERMINATED: "tool call aborted: its completion event came, but its arguments stop mid-document",
}
