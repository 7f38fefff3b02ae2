"""The types LangGraph's checkpoint serializer revives without an allowlist entry.

:mod:`memory.serde`'s strict serializers refuse any revived type outside the tenant's allowlist
unless LangGraph itself deems it safe. LangGraph keeps that set in a private module
(``langgraph.checkpoint.serde._msgpack.SAFE_MSGPACK_TYPES``) and exports no public name for it;
the product imports no private module, so it is copied here, once.
``tests/unit/test_pregel_names.py`` fails when an upgrade of LangGraph changes the set: a type
LangGraph drops must leave this copy too (it is a security allowlist), one it adds may join it.
"""

from __future__ import annotations

#: (module, name) of every type revived as safe, exactly LangGraph's set.
SAFE_MSGPACK_TYPES: frozenset[tuple[str, str]] = frozenset(
    (
        ("builtins", "frozenset"),
        ("builtins", "set"),
        ("collections", "deque"),
        ("datetime", "date"),
        ("datetime", "datetime"),
        ("datetime", "time"),
        ("datetime", "timedelta"),
        ("datetime", "timezone"),
        ("decimal", "Decimal"),
        ("ipaddress", "IPv4Address"),
        ("ipaddress", "IPv4Interface"),
        ("ipaddress", "IPv4Network"),
        ("ipaddress", "IPv6Address"),
        ("ipaddress", "IPv6Interface"),
        ("ipaddress", "IPv6Network"),
        ("langchain_core.documents.base", "Document"),
        ("langchain_core.messages.ai", "AIMessage"),
        ("langchain_core.messages.ai", "AIMessageChunk"),
        ("langchain_core.messages.base", "BaseMessage"),
        ("langchain_core.messages.base", "BaseMessageChunk"),
        ("langchain_core.messages.chat", "ChatMessage"),
        ("langchain_core.messages.chat", "ChatMessageChunk"),
        ("langchain_core.messages.function", "FunctionMessage"),
        ("langchain_core.messages.function", "FunctionMessageChunk"),
        ("langchain_core.messages.human", "HumanMessage"),
        ("langchain_core.messages.human", "HumanMessageChunk"),
        ("langchain_core.messages.modifier", "RemoveMessage"),
        ("langchain_core.messages.system", "SystemMessage"),
        ("langchain_core.messages.system", "SystemMessageChunk"),
        ("langchain_core.messages.tool", "ToolMessage"),
        ("langchain_core.messages.tool", "ToolMessageChunk"),
        ("langgraph.store.base", "GetOp"),
        ("langgraph.store.base", "Item"),
        ("langgraph.types", "Command"),
        ("langgraph.types", "Interrupt"),
        ("langgraph.types", "Overwrite"),
        ("langgraph.types", "PregelTask"),
        ("langgraph.types", "Send"),
        ("langgraph.types", "StateSnapshot"),
        ("langgraph.types", "TimeoutPolicy"),
        ("pathlib", "Path"),
        ("pathlib", "PosixPath"),
        ("pathlib", "WindowsPath"),
        ("pathlib._local", "Path"),
        ("pathlib._local", "PosixPath"),
        ("pathlib._local", "WindowsPath"),
        ("re", "compile"),
        ("uuid", "UUID"),
        ("zoneinfo", "ZoneInfo"),
    )
)
