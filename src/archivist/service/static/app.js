// The Archivist web page: talks to the /v1 API with the API key kept in sessionStorage.
"use strict";

const $ = (id) => document.getElementById(id);
const FINAL = new Set(["ready", "failed"]);
let apiKey = sessionStorage.getItem("archivist-key") || "";
let currentKb = null;
let pollTimer = null;
let service = { answers: true, answers_hint: null };  // GET /v1/supported-types, at login

async function api(path, options = {}) {
  const headers = Object.assign({ Authorization: `Bearer ${apiKey}` }, options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    let reasons = [];
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
      if (Array.isArray(body.errors)) reasons = body.errors.map((entry) => entry.msg);
    } catch (_) { /* not JSON */ }
    const error = new Error(detail);
    error.status = response.status;
    error.reasons = reasons;  // one per refused file or invalid field, when the problem lists them
    throw error;
  }
  return response.status === 204 ? null : response;
}

const kbPath = (name) => `/v1/knowledge-bases/${encodeURIComponent(name)}`;

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "class") node.className = value; else node.setAttribute(key, value);
  }
  for (const child of children) node.append(child);
  return node;
}

async function login(key) {
  apiKey = key;
  const info = await (await api("/v1/supported-types")).json();
  sessionStorage.setItem("archivist-key", key);
  service = info;
  $("who").textContent = `tenant: ${info.tenant}`;
  // No `accept` filter on the picker: text is read under any name (README, METADATA).
  $("types-hint").textContent = `Supported: ${info.extensions.join(" ")}, and text files of any name`;
  $("login-view").hidden = true;
  $("app-view").hidden = false;
  $("logout").hidden = false;
  await loadKbs();
}

function logout() {
  sessionStorage.removeItem("archivist-key");
  location.reload();
}

async function loadKbs() {
  const { items } = await (await api("/v1/knowledge-bases")).json();
  const list = $("kb-list");
  list.replaceChildren();
  for (const kb of items) {
    const item = el("li", { "data-name": kb.name }, el("span", {}, kb.name),
      el("small", {}, String(kb.document_count)));
    if (currentKb === kb.name) item.classList.add("active");
    item.addEventListener("click", () => openKb(kb.name));
    list.append(item);
  }
}

async function openKb(name) {
  currentKb = name;
  $("kb-view").hidden = false;
  $("kb-title").textContent = name;
  $("hits").replaceChildren();
  $("viewer").hidden = true;
  for (const id of ["kb-error", "upload-error", "documents-error", "search-error"]) $(id).textContent = "";
  for (const item of $("kb-list").children) item.classList.toggle("active", item.dataset.name === name);
  await refreshDocuments();
}

async function refreshDocuments() {
  clearTimeout(pollTimer);
  if (!currentKb) return;
  const name = currentKb;
  let items = [];
  try {
    items = (await (await api(`${kbPath(name)}/documents`)).json()).items;
  } catch (error) {
    $("documents-error").textContent = error.message;
    return;
  }
  if (name !== currentKb) return;
  const body = $("documents").tBodies[0];
  body.replaceChildren();
  for (const doc of items) {
    const status = el("span", { class: `status status-${doc.status}`, title: doc.error || "" }, doc.status);
    const remove = el("button", { class: "delete", "aria-label": `delete ${doc.filename}` }, "Delete");
    remove.addEventListener("click", async () => {
      if (!window.confirm(`Delete ${doc.filename}? Its file and chunks are removed for good.`)) return;
      $("documents-error").textContent = "";
      try {
        await api(`${kbPath(name)}/documents/${doc.id}`, { method: "DELETE" });
      } catch (error) {
        $("documents-error").textContent = `Could not delete ${doc.filename}: ${error.message}`;
      }
      await refreshDocuments();
      await loadKbs();
    });
    const view = el("a", { href: "#", class: "view-text" }, doc.filename);
    view.addEventListener("click", (event) => { event.preventDefault(); viewText(name, doc.id, doc.filename); });
    const download = el("button", { class: "download", "aria-label": `download ${doc.filename}` }, "Download");
    download.addEventListener("click", () => downloadFile(name, doc.id, doc.filename)
      .catch((error) => { $("documents-error").textContent = error.message; }));
    body.append(el("tr", { "data-id": doc.id, "data-status": doc.status },
      el("td", {}, view),
      el("td", {}, status, doc.error ? el("div", { class: "error" }, doc.error) : ""),
      el("td", {}, String(doc.chunk_count)),
      el("td", {}, new Date(doc.updated_at).toLocaleString()),
      el("td", { class: "actions" }, download, remove)));
  }
  if (items.some((doc) => !FINAL.has(doc.status))) pollTimer = setTimeout(refreshDocuments, 1000);
}

async function downloadFile(kb, documentId, filename) {
  // Saved, never opened: the bytes go into an octet-stream blob behind a download link, so
  // an uploaded HTML/SVG/XML file cannot run in this page's origin.
  const response = await api(`${kbPath(kb)}/documents/${documentId}/file`);
  const blob = new Blob([await response.arrayBuffer()], { type: "application/octet-stream" });
  const url = URL.createObjectURL(blob);
  const link = el("a", { href: url, download: filename, hidden: "" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function viewText(kb, documentId, filename) {
  // The stored chunks, shown as text (textContent): a safe view of any upload.
  $("viewer").hidden = false;
  $("viewer-title").textContent = filename;
  $("viewer-error").textContent = "";
  const body = $("viewer-chunks");
  body.replaceChildren(el("p", { class: "hint" }, "Loading…"));
  const parts = [];
  try {
    let offset = 0;
    while (offset < 5000) {
      const page = await (await api(
        `${kbPath(kb)}/documents/${documentId}/chunks?offset=${offset}&limit=500`)).json();
      for (const chunk of page.items) {
        parts.push(el("div", { class: "chunk" },
          el("small", {}, `chunk ${chunk.chunk_index}`),
          el("pre", {}, chunk.text ?? `(non-text chunk: ${chunk.media_type})`)));
      }
      offset += page.items.length;
      if (!page.items.length || offset >= page.total) break;
    }
  } catch (error) {
    $("viewer-error").textContent = error.message;
  }
  body.replaceChildren(...(parts.length ? parts : [el("p", { class: "hint" }, "No stored text yet.")]));
}

async function upload(files) {
  if (!currentKb || !files.length) return;
  const refusals = $("upload-error");
  refusals.replaceChildren();
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  let reasons = [];
  try {
    const response = await api(`${kbPath(currentKb)}/documents`, { method: "POST", body: form });
    // The good files are queued; each refused one says why.
    reasons = (await response.json()).items.filter((item) => item.error).map((item) => item.error.detail);
  } catch (error) {
    reasons = error.reasons && error.reasons.length ? error.reasons : [error.message];
  }
  refusals.replaceChildren(...reasons.map((reason) => el("div", { class: "refusal" }, reason)));
  await refreshDocuments();
  await loadKbs();
}

async function search(query) {
  $("search-error").textContent = "";
  const list = $("hits");
  list.replaceChildren();
  try {
    const response = await api(`${kbPath(currentKb)}/search`, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query, top_k: 5 }),
    });
    const { hits } = await response.json();
    if (!hits.length) list.append(el("li", { class: "empty" }, "No hits."));
    for (const hit of hits) {
      const open = el("a", { href: "#", class: "view-text" }, "view text");
      const kb = currentKb;
      open.addEventListener("click", (event) => { event.preventDefault(); viewText(kb, hit.document_id, hit.filename); });
      list.append(el("li", { class: "hit" },
        el("div", { class: "cite" }, el("strong", { class: "citation" }, hit.citation),
          el("span", {}, hit.relevance == null ? `score ${hit.score.toFixed(3)}` : `relevance ${hit.relevance.toFixed(2)}`), open),
        el("p", { class: "text" }, hit.text ?? "(non-text chunk)")));
    }
  } catch (error) {
    $("search-error").textContent = error.message;
  }
}

$("login-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("login-error").textContent = "";
  try {
    await login($("api-key").value.trim());
  } catch (error) {
    $("login-error").textContent = error.status === 401 ? "That key is not valid." : error.message;
  }
});
$("logout").addEventListener("click", logout);
$("viewer-close").addEventListener("click", () => { $("viewer").hidden = true; });
$("kb-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  $("kb-error").textContent = "";
  const name = $("kb-name").value.trim();
  try {
    await api("/v1/knowledge-bases", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ name, description: $("kb-description").value }),
    });
    $("kb-name").value = "";
    $("kb-description").value = "";
    await loadKbs();
    await openKb(name);
  } catch (error) {
    $("kb-error").textContent = error.message;
  }
});
$("file-input").addEventListener("change", (event) => { upload([...event.target.files]); event.target.value = ""; });
const zone = $("drop-zone");
for (const type of ["dragenter", "dragover"]) {
  zone.addEventListener(type, (event) => { event.preventDefault(); zone.classList.add("over"); });
}
for (const type of ["dragleave", "drop"]) {
  zone.addEventListener(type, () => zone.classList.remove("over"));
}
zone.addEventListener("drop", (event) => { event.preventDefault(); upload([...event.dataTransfer.files]); });
$("search-form").addEventListener("submit", (event) => { event.preventDefault(); search($("query").value); });

if (apiKey) login(apiKey).catch(() => { sessionStorage.removeItem("archivist-key"); apiKey = ""; });
