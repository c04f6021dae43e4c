"""From a streamed call to its execution: ``execute_tool``, ``tool_call_context``, the execution
spans, and the ``toolcall`` header that carries a call to another process."""
