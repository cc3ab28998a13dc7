"""Credentials: environment fallback, and keys that never leak into repr, str or JSON."""

from __future__ import annotations

import pytest

from archivist.credential import DashScopeCredential, OpenAICredential


def test_dashscope_key_falls_back_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DASHSCOPE_API_KEY", "sk-from-env")
    assert DashScopeCredential().api_key.get_secret_value() == "sk-from-env"
    assert DashScopeCredential(api_key="sk-explicit").api_key.get_secret_value() == "sk-explicit"


def test_a_missing_dashscope_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DASHSCOPE_API_KEY", raising=False)
    with pytest.raises(ValueError, match="DASHSCOPE_API_KEY"):
        DashScopeCredential()


def test_openai_key_and_url_fall_back_to_the_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://vllm:8000/v1/")
    credential = OpenAICredential()
    assert credential.api_key is not None
    assert credential.api_key.get_secret_value() == "sk-openai-env"
    assert credential.base_url == "http://vllm:8000/v1"
    assert credential.headers() == {"Authorization": "Bearer sk-openai-env"}


@pytest.mark.parametrize(
    "credential",
    [
        DashScopeCredential(api_key="sk-very-secret"),
        OpenAICredential(api_key="sk-very-secret", organization="org"),
    ],
    ids=["dashscope", "openai"],
)
def test_the_key_never_shows(credential: DashScopeCredential | OpenAICredential) -> None:
    for text in (repr(credential), str(credential), credential.model_dump_json()):
        assert "sk-very-secret" not in text


def test_a_bad_base_url_names_the_argument() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAICredential(base_url="localhost:8000")
    with pytest.raises(ValueError, match="base_url"):
        DashScopeCredential(api_key="k", base_url="dashscope.aliyuncs.com")
