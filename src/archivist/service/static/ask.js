// The Ask panel: questions to the open knowledge base, answered by the service's chat model
// (POST /v1/sessions/{id}/messages, read as a Server-Sent Events stream), with citations that
// open the cited passage and the session's history. A service without a chat model
// (`service.answers` false) gets the passages a search finds instead, with how to add one, as
// `archivist ask` prints them. Uses `api`, `el`, `kbPath`, `downloadFile`, `service` and
// `currentKb` from app.js; follows the open knowledge base by watching its title.
"use strict";

const ask = {
  sessionId: sessionStorage.getItem("archivist-session") || "",
  running: null,
  passage: null,
};

function askEls() {
  return {
    panel: $("ask-panel"), history: $("ask-history"), form: $("ask-form"),
    input: $("ask-input"), mode: $("ask-mode"), sessions: $("ask-session"),
    error: $("ask-error"), dialog: $("passage"),
  };
}

function parseSse(buffer, onEvent) {
  // Split complete events off `buffer`; returns the unfinished rest.
  const normalised = buffer.replace(/\r\n?/g, "\n");
  const blocks = normalised.split("\n\n");
  const rest = blocks.pop();
  for (const block of blocks) {
    let name = "message";
    const data = [];
    for (const line of block.split("\n")) {
      if (line.startsWith("event:")) name = line.slice(6).trim();
      else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
    }
    if (data.length) onEvent(name, JSON.parse(data.join("\n")));
  }
  return rest;
}

async function openPassage(citation) {
  const { dialog } = askEls();
  const path = `${kbPath(citation.knowledge_base)}/documents/${encodeURIComponent(citation.document_id)}` +
    `/chunks?offset=${citation.chunk_index}&limit=1`;
  let text = "";
  try {
    const page = await (await api(path)).json();
    text = page.items.length ? (page.items[0].text ?? "(non-text passage)") : "(the passage is gone)";
  } catch (error) {
    text = error.message;
  }
  ask.passage = citation;
  $("passage-title").textContent = citation.citation;
  $("passage-text").textContent = text;
  if (!dialog.open) dialog.showModal();
}

function citationList(citations) {
  const list = el("ol", { class: "citations" });
  for (const citation of citations) {
    const link = el("a", { href: "#", class: "citation-link", "data-document": citation.document_id,
      "data-chunk": String(citation.chunk_index) }, `[${citation.number}] ${citation.citation}`);
    link.addEventListener("click", (event) => { event.preventDefault(); openPassage(citation); });
    list.append(el("li", {}, link));
  }
  return list;
}

function messageItem(role, content, citations = []) {
  const item = el("li", { class: `msg ${role}` },
    el("div", { class: "role" }, role === "user" ? "You" : "Archivist"),
    el("p", { class: "content" }, content));
  if (citations.length) item.append(citationList(citations));
  return item;
}

async function loadSessions() {
  const { sessions } = askEls();
  const { items } = await (await api("/v1/sessions")).json();
  sessions.replaceChildren(el("option", { value: "" }, "New session"));
  for (const session of items) {
    const label = `${session.title || "Untitled"} · ${new Date(session.created_at).toLocaleString()}`;
    sessions.append(el("option", { value: session.id }, label));
  }
  if (!items.some((s) => s.id === ask.sessionId)) ask.sessionId = "";
  sessions.value = ask.sessionId;
}

async function showSession(id) {
  const { history, error } = askEls();
  ask.sessionId = id;
  sessionStorage.setItem("archivist-session", id);
  history.replaceChildren();
  error.textContent = "";
  if (!id) return;
  try {
    const session = await (await api(`/v1/sessions/${encodeURIComponent(id)}`)).json();
    for (const message of session.messages) {
      history.append(messageItem(message.role, message.content, message.citations));
    }
  } catch (err) {
    error.textContent = err.message;
  }
}

async function ensureSession(question) {
  if (ask.sessionId) return ask.sessionId;
  const response = await api("/v1/sessions", {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ title: question.slice(0, 80) }),
  });
  const session = await response.json();
  ask.sessionId = session.id;
  sessionStorage.setItem("archivist-session", session.id);
  await loadSessions();
  return session.id;
}

async function showPassages(question) {
  // No chat model: the passages a search of the open knowledge base finds, and the hint.
  const { history } = askEls();
  const kb = currentKb;
  history.append(messageItem("user", question));
  const item = messageItem("assistant", "Here are the passages a search finds.");
  item.classList.add("passages");
  const hint = service.answers_hint || "no chat model is configured";
  item.append(el("p", { class: "hint no-answers" }, hint.charAt(0).toUpperCase() + hint.slice(1)));
  history.append(item);
  try {
    const response = await api(`${kbPath(kb)}/search`, {
      method: "POST", headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ query: question, top_k: 5 }),
    });
    const { hits } = await response.json();
    if (!hits.length) item.append(el("p", { class: "empty" }, "No passages found."));
    const list = el("ol", { class: "citations passage-list" });
    hits.forEach((hit, index) => {
      const citation = { number: index + 1, knowledge_base: kb, document_id: hit.document_id,
        filename: hit.filename, chunk_index: hit.chunk_index, citation: hit.citation };
      const link = el("a", { href: "#", class: "citation-link", "data-document": hit.document_id,
        "data-chunk": String(hit.chunk_index) }, `[${index + 1}] ${hit.citation}`);
      link.addEventListener("click", (event) => { event.preventDefault(); openPassage(citation); });
      list.append(el("li", { class: "passage" }, link, el("p", { class: "content" }, hit.text ?? "(non-text passage)")));
    });
    if (hits.length) item.append(list);
  } catch (err) {
    item.classList.add("failed");
    item.append(el("p", { class: "error" }, err.message));
  }
}

async function askQuestion(question) {
  const { history, error, form, mode } = askEls();
  if (!currentKb || ask.running) return;
  error.textContent = "";
  if (!service.answers) {
    await showPassages(question);
    return;
  }
  const kb = currentKb;
  history.append(messageItem("user", question));
  const answer = messageItem("assistant", "");
  answer.classList.add("streaming");
  history.append(answer);
  const content = answer.querySelector(".content");
  const controller = new AbortController();
  ask.running = controller;
  form.classList.add("busy");
  const fail = (detail) => {
    answer.classList.add("failed");
    answer.append(el("p", { class: "error" }, detail));
  };
  try {
    const id = await ensureSession(question);
    const response = await api(`/v1/sessions/${encodeURIComponent(id)}/messages`, {
      method: "POST", signal: controller.signal,
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ content: question, knowledge_bases: [kb], mode: mode.value }),
    });
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let finished = false;
    const onEvent = (name, data) => {
      if (name === "delta") content.textContent += data.text;
      else if (name === "tool_call") answer.append(el("div", { class: "tool-call" }, `searching: ${data.input.query ?? ""}`));
      else if (name === "done") {
        finished = true;
        content.textContent = data.content;
        if (data.citations.length) answer.append(citationList(data.citations));
      } else if (name === "error") {
        finished = true;
        fail(data.detail);
      }
    };
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer = parseSse(buffer + value, onEvent);
    }
    if (!finished) fail("the answer stopped before it was complete");
  } catch (err) {
    fail(err.name === "AbortError" ? "stopped" : err.message);
  } finally {
    answer.classList.remove("streaming");
    form.classList.remove("busy");
    ask.running = null;
  }
}

(function setUpAskPanel() {
  const { form, input, sessions, dialog } = askEls();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const question = input.value.trim();
    if (!question) return;
    input.value = "";
    askQuestion(question);
  });
  $("ask-stop").addEventListener("click", () => { if (ask.running) ask.running.abort(); });
  sessions.addEventListener("change", () => showSession(sessions.value));
  $("passage-close").addEventListener("click", () => dialog.close());
  $("passage-file").addEventListener("click", (event) => {
    event.preventDefault();
    if (!ask.passage) return;
    const { knowledge_base: kb, document_id: id, filename } = ask.passage;
    downloadFile(kb, id, filename).catch((err) => { $("passage-text").textContent = err.message; });
  });
  // app.js sets the title when a knowledge base opens: refresh sessions and history then.
  new MutationObserver(async () => {
    if (!currentKb) return;
    askEls().mode.hidden = !service.answers;  // retrieval modes are the chat model's
    try {
      await loadSessions();
      await showSession(ask.sessionId);
    } catch (err) {
      askEls().error.textContent = err.message;
    }
  }).observe($("kb-title"), { childList: true, characterData: true, subtree: true });
})();
