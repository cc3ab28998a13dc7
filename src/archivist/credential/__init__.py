"""Credentials for model providers; keys come from arguments or the environment, never logs."""

from archivist.credential.base import CredentialBase
from archivist.credential.dashscope import DASHSCOPE_BASE_URL, DashScopeCredential
from archivist.credential.openai import OPENAI_BASE_URL, OpenAICredential

__all__ = [
    "DASHSCOPE_BASE_URL",
    "OPENAI_BASE_URL",
    "CredentialBase",
    "DashScopeCredential",
    "OpenAICredential",
]
