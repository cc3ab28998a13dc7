// The Archivist web page: talks to the /v1 API with the API key kept in sessionStorage.
"use strict";

const $ = (id) => document.getElementById(id);
const FINAL = new Set(["ready", "failed"]);
let apiKey = sessionStorage.getItem("archivist-key") || "";
let currentKb = null;
let pollTimer = null;

async function api(path, options = {}) {
  const headers = Object.assign({ Authorization: `Bearer ${apiKey}` }, options.headers || {});
  const response = await fetch(path, Object.assign({}, options, { headers }));
  if (!response.ok) {
    let detail = `${response.status} ${response.statusText}`;
    try {
      const body = await response.json();
      detail = typeof body.detail === "string" ? body.detail : JSON.stringify(body.detail);
    } catch (_) { /* not JSON */ }
    const error = new Error(detail);
    error.status = response.status;
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
  $("who").textContent = `tenant: ${info.tenant}`;
  $("file-input").accept = info.extensions.join(",");
  $("types-hint").textContent = `Supported: ${info.extensions.join(" ")}`;
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
    $("upload-error").textContent = error.message;
  }
  if (name !== currentKb) return;
  const body = $("documents").tBodies[0];
  body.replaceChildren();
  for (const doc of items) {
    const status = el("span", { class: `status status-${doc.status}`, title: doc.error || "" }, doc.status);
    const remove = el("button", { class: "delete", "aria-label": `delete ${doc.filename}` }, "Delete");
    remove.addEventListener("click", async () => {
      await api(`${kbPath(name)}/documents/${doc.id}`, { method: "DELETE" });
      await refreshDocuments();
      await loadKbs();
    });
    const fileLink = el("a", { href: "#", class: "file-link" }, doc.filename);
    fileLink.addEventListener("click", (event) => { event.preventDefault(); openFile(name, doc.id); });
    body.append(el("tr", { "data-id": doc.id, "data-status": doc.status },
      el("td", {}, fileLink),
      el("td", {}, status, doc.error ? el("div", { class: "error" }, doc.error) : ""),
      el("td", {}, String(doc.chunk_count)),
      el("td", {}, new Date(doc.updated_at).toLocaleTimeString()),
      el("td", {}, remove)));
  }
  if (items.some((doc) => !FINAL.has(doc.status))) pollTimer = setTimeout(refreshDocuments, 1000);
}

async function openFile(kb, documentId) {
  // The API needs the Authorization header, so fetch the file and open it as a blob URL.
  const response = await api(`${kbPath(kb)}/documents/${documentId}/file`);
  const url = URL.createObjectURL(await response.blob());
  window.open(url, "_blank");
  setTimeout(() => URL.revokeObjectURL(url), 60000);
}

async function upload(files) {
  if (!currentKb || !files.length) return;
  $("upload-error").textContent = "";
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  try {
    await api(`${kbPath(currentKb)}/documents`, { method: "POST", body: form });
  } catch (error) {
    $("upload-error").textContent = error.message;
  }
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
      const open = el("a", { href: "#", class: "open-file" }, "open file");
      open.addEventListener("click", (event) => { event.preventDefault(); openFile(currentKb, hit.document_id); });
      list.append(el("li", { class: "hit" },
        el("div", { class: "cite" }, el("strong", { class: "citation" }, hit.citation),
          el("span", {}, `score ${hit.score.toFixed(3)}`), open),
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
