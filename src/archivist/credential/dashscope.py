"""`DashScopeCredential`: the API key (and endpoint) for Alibaba Cloud Model Studio / DashScope."""

from __future__ import annotations

import os

from pydantic import ConfigDict, Field, SecretStr, field_validator

from archivist.credential._env import from_env
from archivist.credential.base import CredentialBase

DASHSCOPE_BASE_URL = "https://dashscope.aliyuncs.com/api/v1"
"""The Beijing region; use https://dashscope-intl.aliyuncs.com/api/v1 for Singapore."""


class DashScopeCredential(CredentialBase):
    """A DashScope API key; `api_key` falls back to the env variable `DASHSCOPE_API_KEY`,
    `base_url` to `DASHSCOPE_BASE_URL` (e.g. the Singapore region), then the Beijing one.

    The key is a `SecretStr`, so it never shows in `repr`, `str` or a JSON dump.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_key: SecretStr = Field(default=None, validate_default=True)
    base_url: str = Field(
        default_factory=lambda: os.environ.get("DASHSCOPE_BASE_URL") or DASHSCOPE_BASE_URL
    )

    @field_validator("api_key", mode="before")
    @classmethod
    def _key_or_env(cls, value: object) -> object:
        value = from_env(value, "DASHSCOPE_API_KEY")
        if value is None or (isinstance(value, str | SecretStr) and not _reveal(value)):
            raise ValueError("api_key: no DashScope API key given and DASHSCOPE_API_KEY is not set")
        return value

    @field_validator("base_url")
    @classmethod
    def _strip_slash(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value.rstrip("/")

    def headers(self) -> dict[str, str]:
        """The auth header every request carries."""
        return {"Authorization": f"Bearer {self.api_key.get_secret_value()}"}


def _reveal(value: str | SecretStr) -> str:
    return value.get_secret_value() if isinstance(value, SecretStr) else value
