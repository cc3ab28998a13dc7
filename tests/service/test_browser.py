"""The web page in real headless Chromium: log in, create a KB, upload, watch, search, open."""

from __future__ import annotations

import contextlib
import os
import re
import time
from pathlib import Path

import pytest
from service_helpers import new_key

from factories import make_pdf
from system_programs import chromium, needs_chromium

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
ARTIFACTS = Path(
    os.environ.get("ARCHIVIST_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)

pytestmark = needs_chromium


def test_upload_watch_search_and_open_in_the_page(service, tmp_path: Path) -> None:
    key = new_key(service.settings, "browser-tenant")
    pdf = tmp_path / "handbook.pdf"
    pdf.write_bytes(
        make_pdf(
            [
                "Welcome to the staff handbook.",
                "Holidays: every employee gets twenty-eight days of paid leave per year.",
            ]
        )
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(service.url + "/")
            page.fill("#api-key", "ak_wrong")
            page.click("#login-form button")
            sync_api.expect(page.locator("#login-error")).to_contain_text("not valid")

            page.fill("#api-key", key)
            page.click("#login-form button")
            sync_api.expect(page.locator("#who")).to_have_text("tenant: browser-tenant")
            # the picker offers every file: text is read under any name (README, METADATA)
            assert page.get_attribute("#file-input", "accept") is None
            sync_api.expect(page.locator("#types-hint")).to_contain_text(".pdf")
            sync_api.expect(page.locator("#types-hint")).to_contain_text("text files of any name")

            page.fill("#kb-name", "handbook")
            page.fill("#kb-description", "HR documents")
            page.click("#kb-form button")
            sync_api.expect(page.locator("#kb-title")).to_have_text("handbook")

            page.set_input_files("#file-input", str(pdf))  # the picker
            page.evaluate(  # a real drop event carrying a File, as dragging one in sends
                """() => {
                    const transfer = new DataTransfer();
                    transfer.items.add(new File(
                        ["Parking: staff park in the north garage, level two."],
                        "parking.txt", {type: "text/plain"}));
                    const zone = document.getElementById("drop-zone");
                    zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
                }"""
            )
            rows = page.locator("#documents tbody tr")
            sync_api.expect(rows).to_have_count(2, timeout=30_000)
            ready = page.locator('#documents tbody tr[data-status="ready"]')
            sync_api.expect(ready).to_have_count(2, timeout=180_000)  # no reload: polled

            page.fill("#query", "how many days of paid leave")
            page.click("#search-form button")
            first = page.locator("#hits li.hit").first
            sync_api.expect(first).to_be_visible(timeout=60_000)
            sync_api.expect(first.locator(".citation")).to_contain_text("handbook.pdf, page 2")
            sync_api.expect(first.locator(".text")).to_contain_text("twenty-eight days")
            # the same measure as the CLI and the API: relevance, 0..1
            sync_api.expect(first.locator(".cite")).to_contain_text(
                re.compile(r"relevance 0\.\d\d|relevance 1\.00")
            )

            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / "service-page.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000

            first.locator(".view-text").click()  # the stored text, not the file as a page
            sync_api.expect(page.locator("#viewer-title")).to_have_text("handbook.pdf")
            sync_api.expect(page.locator("#viewer-chunks")).to_contain_text("twenty-eight days")
        finally:
            browser.close()


EVIL_HTML = (
    b"<html><body><h1>Quarterly report</h1>"
    b"<script>document.title = 'pwned:' + sessionStorage.getItem('archivist-key');"
    b"window.opener && (window.opener.document.title = 'pwned-opener');</script>"
    b"<img src=x onerror=\"document.title='pwned-img'\">"
    b"<p>Revenue grew in the third quarter.</p></body></html>"
)
EVIL_XML = (
    b'<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>'
    b"<script>document.title = 'pwned-xml:' + sessionStorage.getItem('archivist-key')</script>"
    b"<p>Supplier list for the warehouse.</p></body></html>"
)


def test_uploaded_html_and_xml_never_run_in_the_page(service, tmp_path: Path) -> None:
    """Stored XSS: a hostile upload is viewed as text and downloaded, never rendered; the
    script cannot run and the logged-in key stays unreadable, even opened directly."""
    key = new_key(service.settings, "xss-tenant")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            context = browser.new_context(accept_downloads=True)
            page = context.new_page()
            dialogs: list[str] = []
            accept: list[bool] = []  # the answers to give the next confirm() dialogs

            def answer(dialog: sync_api.Dialog) -> None:
                dialogs.append(dialog.message)
                if accept and accept.pop(0):
                    dialog.accept()
                else:
                    dialog.dismiss()

            page.on("dialog", answer)
            page.goto(service.url + "/")
            sync_api.expect(page.locator("#app-view")).to_be_hidden()  # logged out: login only
            sync_api.expect(page.locator("#login-view")).to_be_visible()
            page.fill("#api-key", key)
            page.click("#login-form button")
            sync_api.expect(page.locator("#who")).to_have_text("tenant: xss-tenant")
            page.fill("#kb-name", "inbox")
            page.click("#kb-form button")
            sync_api.expect(page.locator("#kb-title")).to_have_text("inbox")
            for name, data in (("evil.html", EVIL_HTML), ("evil.xml", EVIL_XML)):
                (tmp_path / name).write_bytes(data)
            page.set_input_files(
                "#file-input", [str(tmp_path / "evil.html"), str(tmp_path / "evil.xml")]
            )
            ready = page.locator('#documents tbody tr[data-status="ready"]')
            sync_api.expect(ready).to_have_count(2, timeout=180_000)
            title = page.title()

            html_row = page.locator("#documents tbody tr", has_text="evil.html")
            html_row.locator(".view-text").click()
            sync_api.expect(page.locator("#viewer-chunks")).to_contain_text("Revenue grew")
            with page.expect_download() as download_info:
                html_row.locator(".download").click()
            download = download_info.value
            assert download.suggested_filename == "evil.html"
            assert Path(download.path()).read_bytes() == EVIL_HTML
            page.locator("#documents tbody tr", has_text="evil.xml").locator(".view-text").click()
            sync_api.expect(page.locator("#viewer-chunks")).to_contain_text("Supplier list")
            assert len(context.pages) == 1  # nothing was opened as a page
            assert page.title() == title and "pwned" not in page.title()

            # The page's CSP refuses inline code even when markup gets in.
            page.evaluate(
                """() => { const d = document.createElement('div');
                d.innerHTML = "<img src=x onerror=\\"document.title='pwned-inline'\\">";
                document.body.append(d); }"""
            )
            page.wait_for_timeout(300)
            assert "pwned" not in page.title()

            # Even a browser sent straight to the raw file (with the key) only downloads it,
            # and as a sandboxed opaque origin it could not read the page's storage.
            doc_id = html_row.get_attribute("data-id")
            file_url = f"{service.url}/v1/knowledge-bases/inbox/documents/{doc_id}/file"
            direct = context.new_page()
            direct.set_extra_http_headers({"Authorization": f"Bearer {key}"})
            with direct.expect_download(), contextlib.suppress(sync_api.Error):
                direct.goto(file_url)  # raises "Download is starting": nothing was shown
            assert "pwned" not in direct.title()
            response = direct.request.get(file_url, headers={"Authorization": f"Bearer {key}"})
            assert response.headers["content-disposition"].startswith("attachment")
            assert response.headers["x-content-type-options"] == "nosniff"
            assert "sandbox" in response.headers["content-security-policy"]
            assert not dialogs  # no alert() from the uploads either

            # Times show the date; delete asks first and does nothing when declined.
            year = str(time.gmtime().tm_year)
            sync_api.expect(html_row.locator("td").nth(3)).to_contain_text(year)
            rows = page.locator("#documents tbody tr")
            accept.append(False)
            html_row.locator("button.delete").click()
            page.wait_for_timeout(500)
            assert dialogs and "evil.html" in dialogs[-1]
            sync_api.expect(rows).to_have_count(2)
            accept.append(True)
            html_row.locator("button.delete").click()
            sync_api.expect(rows).to_have_count(1)
            sync_api.expect(page.locator("#documents-error")).to_have_text("")
        finally:
            browser.close()


def test_the_api_docs_render_offline_under_the_pages_policy(service) -> None:
    """`/docs` shows every operation with Swagger UI from the service itself: nothing is
    fetched from another origin and the Content-Security-Policy blocks nothing."""
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            page = browser.new_page()
            problems: list[str] = []
            origins: set[str] = set()
            page.on(
                "console",
                lambda message: problems.append(message.text) if message.type == "error" else None,
            )
            page.on("request", lambda request: origins.add(request.url.split("/")[2]))
            page.on(
                "response",
                lambda answer: (
                    problems.append(f"{answer.status} {answer.url}")
                    if answer.status >= 400
                    else None
                ),
            )
            response = page.goto(service.url + "/docs")
            assert response is not None and response.ok
            assert "script-src 'self'" in response.headers["content-security-policy"]
            sync_api.expect(page.locator(".opblock").first).to_be_visible(timeout=20_000)
            paths = page.locator(".opblock-summary-path").all_inner_texts()
            assert any(
                "/v1/knowledge-bases/{name}/search" in p.replace("\u200b", "") for p in paths
            )
            page.click("button.authorize")
            sync_api.expect(page.locator(".auth-container input")).to_be_visible()
            assert problems == []
            assert origins == {service.url.split("/")[2]}
        finally:
            browser.close()


DROP_BATCH = """() => {
    const transfer = new DataTransfer();
    transfer.items.add(new File(["# Lighthouses\\n\\nThe keeper lights the lamp at dusk.\\n"],
        "good.md", {type: "text/markdown"}));
    const exe = new Uint8Array(64);
    exe.set([0x4d, 0x5a, 0x90, 0x00, 0x03]);
    transfer.items.add(new File([exe], "bad.exe", {type: "application/octet-stream"}));
    transfer.items.add(new File(
        ["Metadata-Version: 2.1\\nName: harbour-tools\\nSummary: Tide tables for the harbour master\\n"],
        "METADATA"));
    const zone = document.getElementById("drop-zone");
    zone.dispatchEvent(new DragEvent("drop", {dataTransfer: transfer, bubbles: true}));
}"""


def test_a_batch_shows_its_refusal_and_ask_without_a_model_shows_passages(service) -> None:
    """The shared service has no chat model: a dropped batch queues its good files and
    lists the refused one with its reason; Ask shows the passages a search finds and how
    to add a model, creating no session; a passage opens, and its file downloads."""
    key = new_key(service.settings, "passages-tenant")
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium(), args=["--no-sandbox"])
        try:
            context = browser.new_context(accept_downloads=True)
            page = context.new_page()
            page.goto(service.url + "/")
            page.fill("#api-key", key)
            page.click("#login-form button")
            page.fill("#kb-name", "harbour")
            page.click("#kb-form button")
            sync_api.expect(page.locator("#kb-title")).to_have_text("harbour")

            page.evaluate(DROP_BATCH)
            refusal = page.locator("#upload-error .refusal")
            sync_api.expect(refusal).to_have_count(1, timeout=30_000)
            sync_api.expect(refusal).to_contain_text("bad.exe: unsupported file type .exe")
            sync_api.expect(refusal).to_contain_text("a Windows executable")
            ready = page.locator('#documents tbody tr[data-status="ready"]')
            sync_api.expect(ready).to_have_count(2, timeout=180_000)
            sync_api.expect(page.locator("#documents tbody tr", has_text="METADATA")).to_have_count(1)

            sync_api.expect(page.locator("#ask-mode")).to_be_hidden()
            page.fill("#ask-input", "Who keeps the tide tables?")
            page.click("#ask-form button[type=submit]")
            answer = page.locator("#ask-history li.msg.assistant.passages").last
            sync_api.expect(answer.locator(".no-answers")).to_contain_text(
                "archivist serve --chat-base-url"
            )
            sync_api.expect(answer.locator(".no-answers")).to_contain_text("archivist chat-server")
            first = answer.locator(".passage").first
            sync_api.expect(first.locator(".citation-link")).to_contain_text("METADATA")
            sync_api.expect(first.locator(".content")).to_contain_text("Tide tables")
            sync_api.expect(answer).not_to_have_class(re.compile("failed"))
            sessions = page.request.get(
                service.url + "/v1/sessions", headers={"Authorization": f"Bearer {key}"}
            )
            assert sessions.json()["items"] == []  # nothing asked a model

            first.locator(".citation-link").click()
            sync_api.expect(page.locator("#passage")).to_be_visible()
            sync_api.expect(page.locator("#passage-text")).to_contain_text("harbour master")
            with page.expect_download() as download_info:
                page.click("#passage-file")
            assert download_info.value.suggested_filename == "METADATA"
            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(ARTIFACTS / "service-ask-passages.png"), full_page=True)
        finally:
            browser.close()
