"""Archivist as a retriever of other frameworks: LangChain, LlamaIndex and Haystack.

`archivist.integrations.source` is the framework-neutral part every retriever wraps: a
`PassageSource` (a local `KnowledgeBase`, or a knowledge base of a running service over HTTP)
answering `Passage`s. Each framework's retriever is its own module, imported by name, so
importing this package loads no framework.
"""
