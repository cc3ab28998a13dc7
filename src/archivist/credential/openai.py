"""`OpenAICredential`: key, endpoint and organization for any OpenAI-compatible server."""

from __future__ import annotations

from pydantic import ConfigDict, Field, SecretStr, field_validator

from archivist.credential._env import from_env
from archivist.credential.base import CredentialBase

OPENAI_BASE_URL = "https://api.openai.com/v1"


class OpenAICredential(CredentialBase):
    """Credentials for an OpenAI-compatible API (OpenAI, vLLM, Ollama, DashScope compatible mode).

    `api_key` falls back to `OPENAI_API_KEY` and may stay None (local servers need none);
    `base_url` falls back to `OPENAI_BASE_URL`, then to OpenAI's own endpoint. The key is a
    `SecretStr`, so it never shows in `repr`, `str` or a JSON dump.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    api_key: SecretStr | None = Field(default=None, validate_default=True)
    base_url: str = Field(default=None, validate_default=True)
    organization: str | None = None

    @field_validator("api_key", mode="before")
    @classmethod
    def _key_or_env(cls, value: object) -> object:
        return from_env(value, "OPENAI_API_KEY")

    @field_validator("base_url", mode="before")
    @classmethod
    def _url_or_env(cls, value: object) -> object:
        value = from_env(value, "OPENAI_BASE_URL") or OPENAI_BASE_URL
        if not isinstance(value, str) or not value.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {value!r}")
        return value.rstrip("/")

    def headers(self) -> dict[str, str]:
        """The auth headers every request carries (none when there is no key)."""
        headers: dict[str, str] = {}
        if self.api_key is not None and self.api_key.get_secret_value():
            headers["Authorization"] = f"Bearer {self.api_key.get_secret_value()}"
        if self.organization:
            headers["OpenAI-Organization"] = self.organization
        return headers
