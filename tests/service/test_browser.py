"""The web page in real headless Chromium: log in, create a KB, upload, watch, search, open."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from service_helpers import new_key

from factories import make_pdf

sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed")
CHROMIUM = shutil.which("chromium")
ARTIFACTS = Path(
    os.environ.get("ARCHIVIST_TEST_ARTIFACTS", Path(__file__).parents[2] / "test-artifacts")
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install -y chromium)"
)


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
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            page = browser.new_page(viewport={"width": 1200, "height": 800})
            page.goto(service.url + "/")
            page.fill("#api-key", "ak_wrong")
            page.click("#login-form button")
            sync_api.expect(page.locator("#login-error")).to_contain_text("not valid")

            page.fill("#api-key", key)
            page.click("#login-form button")
            sync_api.expect(page.locator("#who")).to_have_text("tenant: browser-tenant")
            accept = page.get_attribute("#file-input", "accept") or ""
            assert ".pdf" in accept.split(",") and ".txt" in accept.split(",")

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

            ARTIFACTS.mkdir(parents=True, exist_ok=True)
            shot = ARTIFACTS / "service-page.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000

            with page.expect_popup() as popup_info:
                first.locator(".open-file").click()
            popup = popup_info.value
            assert popup.url.startswith("blob:")
        finally:
            browser.close()
