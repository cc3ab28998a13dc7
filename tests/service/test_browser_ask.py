"""The page's Ask panel in real headless Chromium against a real local chat server (llama.cpp
serving Gemma 3 270M): the answer streams in, its citation opens the cited passage, the
session's history comes back after a reload, and a chat server stopped mid-answer shows an
error on that answer. Heavy: the model runs on the CPU."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from service_helpers import client, new_key, running_service, wait_final

from archivist.service import ServiceSettings
from cli.llama_server import LlamaServer
from system_programs import chromium, needs_chromium

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
pytest.importorskip("xllamacpp", reason="xllamacpp ships wheels for x86_64 Linux only")
ARTIFACTS = Path(
    os.environ.get("ARCHIVIST_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)
FACT = "On the planet Zorbia the sky is bright green, because of the copper dust in the air."

pytestmark = [
    pytest.mark.heavy,
    needs_chromium,
]

STREAMING_WITH_TEXT = """() => {
    const answers = document.querySelectorAll('#ask-history li.msg.assistant');
    const last = answers[answers.length - 1];
    return !!last && last.classList.contains('streaming')
        && last.querySelector('.content').textContent.length > 0;
}"""


def test_ask_panel_streams_cites_keeps_history_and_shows_a_dead_chat_server(
    tmp_path: Path,
) -> None:
    llama = LlamaServer(tmp_path / "gguf")
    settings = ServiceSettings(
        home=tmp_path / "home",
        chat_base_url=llama.base_url,
        chat_model="gemma",
        chat_max_tokens=24,
        chat_timeout=300,
    )
    key = new_key(settings, "asker")
    try:
        with running_service(settings) as url, sync_api.sync_playwright() as playwright:
            with client(url, key) as http:
                http.post("/v1/knowledge-bases", json={"name": "planets"})
                http.post(
                    "/v1/knowledge-bases/planets/documents",
                    files=[("files", ("zorbia.txt", FACT.encode(), "text/plain"))],
                )
                wait_final(http, "planets")
            browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
            try:
                page = browser.new_page(viewport={"width": 1200, "height": 900})
                page.goto(url + "/")
                page.fill("#api-key", key)
                page.click("#login-form button")
                page.click('#kb-list li[data-name="planets"]')
                sync_api.expect(page.locator("#kb-title")).to_have_text("planets")

                page.fill("#ask-input", "What colour is the Zorbian sky?")
                page.click("#ask-form button[type=submit]")
                answer = page.locator("#ask-history li.msg.assistant").last
                # text shows while the answer is still streaming
                page.wait_for_function(STREAMING_WITH_TEXT, timeout=300_000)
                sync_api.expect(answer).not_to_have_class(re.compile("streaming"), timeout=600_000)
                sync_api.expect(answer).not_to_have_class(re.compile("failed"))
                link = answer.locator(".citations a.citation-link")
                sync_api.expect(link).to_have_count(1)
                sync_api.expect(link).to_contain_text("zorbia.txt")
                link.click()
                sync_api.expect(page.locator("#passage")).to_be_visible()
                sync_api.expect(page.locator("#passage-text")).to_contain_text("bright green")

                ARTIFACTS.mkdir(parents=True, exist_ok=True)
                shot = ARTIFACTS / "service-ask-panel.png"
                page.screenshot(path=str(shot), full_page=True)
                assert shot.stat().st_size > 10_000
                page.click("#passage-close")
                answered = answer.locator(".content").inner_text()

                page.reload()  # the key and the session are kept for the tab
                page.click('#kb-list li[data-name="planets"]')
                history = page.locator("#ask-history li.msg")
                sync_api.expect(history).to_have_count(2)
                sync_api.expect(history.nth(0)).to_contain_text("Zorbian sky")
                assert history.nth(1).locator(".content").inner_text() == answered
                sync_api.expect(history.nth(1).locator(".citation-link")).to_have_count(1)

                page.fill("#ask-input", "Tell me more about Zorbia.")
                page.click("#ask-form button[type=submit]")
                page.wait_for_function(STREAMING_WITH_TEXT, timeout=300_000)
                llama.kill()  # the chat server stops mid-answer
                failed = page.locator("#ask-history li.msg.assistant").last
                sync_api.expect(failed).to_have_class(re.compile("failed"), timeout=120_000)
                sync_api.expect(failed.locator(".error")).to_contain_text("chat model")
                page.screenshot(path=str(ARTIFACTS / "service-ask-panel-error.png"))
            finally:
                browser.close()
    finally:
        llama.kill()
