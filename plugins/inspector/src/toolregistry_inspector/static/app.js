// toolregistry inspector: live pages over one server-sent event stream (/api/events): new
// calls in the log and in a tool's recent calls, the tools, changes and approvals pages
// refreshed when they change. No framework, no build step; every page works without it.
"use strict";

function cell(row, text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  row.appendChild(td);
  return td;
}

function clock(seconds) {
  const d = new Date(seconds * 1000);
  const pad = (n, w) => String(n).padStart(w, "0");
  return `${pad(d.getHours(), 2)}:${pad(d.getMinutes(), 2)}:${pad(d.getSeconds(), 2)}.${pad(d.getMilliseconds(), 3)}`;
}

function addEntry(tbody, e) {
  const row = document.createElement("tr");
  row.dataset.seq = e.seq;
  const number = cell(row, "");
  const open = document.createElement("a");
  open.href = document.body.dataset.base + "/calls/" + e.seq;
  open.setAttribute("aria-label", "call " + e.seq);
  open.textContent = String(e.seq);
  number.appendChild(open);
  cell(row, clock(e.time));
  const name = cell(row, "");
  const link = document.createElement("a");
  link.href = document.body.dataset.base + "/tools/" + encodeURIComponent(e.tool);
  link.textContent = e.tool;
  name.appendChild(link);
  cell(row, e.call_id || "—");
  cell(row, e.outcome, "outcome-" + e.outcome);
  cell(row, (e.duration * 1000).toFixed(1));
  const args = cell(row, "");
  const code = document.createElement("code");
  code.textContent = JSON.stringify(e.arguments);
  args.appendChild(code);
  let note = e.reason || "";
  if (e.error && e.outcome !== "ok") note += " " + e.error.split("\n")[0].slice(0, 200);
  if (e.approval) note += " approval " + e.approval.id;
  if (e.spool) note += " spool " + e.spool;
  cell(row, note.trim());
  tbody.insertBefore(row, tbody.firstChild);
  while (tbody.rows.length > 500) tbody.deleteRow(tbody.rows.length - 1);
}

function liveLog(stream) {
  const table = document.getElementById("log-table");
  if (!table) return;
  const tbody = table.tBodies[0];
  const toggle = document.getElementById("live-toggle");
  const status = document.getElementById("live-status");
  let live = table.dataset.live !== "false";
  if (toggle) {
    toggle.addEventListener("click", () => {
      live = !live;
      toggle.setAttribute("aria-pressed", String(live));
      toggle.textContent = live ? "Pause" : "Resume";
      status.textContent = live ? "Live: new calls appear at the top." : "Paused.";
    });
  }
  const held = [];
  stream.addEventListener("call", (event) => {
    const e = JSON.parse(event.data);
    held.push(e);
    if (!live) return;
    while (held.length) addEntry(tbody, held.shift());
    table.dataset.last = String(e.seq);
  });
  stream.addEventListener("error", () => {
    if (status) status.textContent = "Lost the connection to the inspector; retrying.";
  });
  stream.addEventListener("open", () => {
    if (status && live) status.textContent = "Live: new calls appear at the top.";
  });
}

// Replace the element of id `id` by the one of a fresh copy of this page, unless the
// person is typing in it. Fetches may overlap on a slow server and be answered out of order:
// a copy older than the one shown is dropped (each is shown when it comes, so a server slower
// than the refreshes still updates the page).
const asked = {};
const shown = {};
async function refresh(id) {
  const here = document.getElementById(id);
  if (!here) return;
  const active = document.activeElement;
  if (active && here.contains(active) && active.matches("input, select, textarea")) return;
  const ticket = (asked[id] = (asked[id] || 0) + 1);
  const response = await fetch(window.location.href, { credentials: "same-origin" });
  if (!response.ok) return;
  const text = await response.text();
  if (ticket < (shown[id] || 0)) return;  // a newer copy is shown already
  shown[id] = ticket;
  const fresh = new DOMParser().parseFromString(text, "text/html");
  const there = fresh.getElementById(id);
  if (there) here.replaceChildren(...there.childNodes);
}

// At most one refresh of an element a second, however fast the events come.
const pending = new Set();
function refreshSoon(id) {
  if (pending.has(id)) return;
  pending.add(id);
  setTimeout(() => { pending.delete(id); refresh(id); }, 1000);
}

function livePage() {
  const page = document.body.dataset.page;
  const table = document.getElementById("log-table");
  const params = new URLSearchParams();
  const recent = document.getElementById("recent");
  if (table) {
    if (table.dataset.live === "false") return;  // an older page of the log stays still
    params.set("after", table.dataset.last || "0");
    if (table.dataset.tool) params.set("tool", table.dataset.tool);
    if (table.dataset.outcome) params.set("outcome", table.dataset.outcome);
  } else if (recent && recent.dataset.last) {
    // from the newest call as the page was made: one that ended before the stream
    // connected still refreshes the tool's recent calls
    params.set("after", recent.dataset.last);
  }
  const stream = new EventSource(document.body.dataset.base + "/api/events?" + params);
  window.addEventListener("pagehide", () => stream.close());
  liveLog(stream);
  stream.addEventListener("call", (event) => {
    if (recent && JSON.parse(event.data).tool === recent.dataset.tool) refreshSoon("recent");
    if (page === "stats") refreshSoon("main");
  });
  stream.addEventListener("running", () => {
    if (page === "running") refreshSoon("main");
  });
  stream.addEventListener("page", () => {
    if (["tools", "approvals", "changes", "stats"].includes(page)) refreshSoon("main");
  });
}

// The try-it form: the browser checks each field against the tool's JSON Schema (the limits
// are attributes of the inputs); JSON fields and one-item-a-line lists are checked here.
function checkField(el) {
  let message = "";
  const text = el.value.trim();
  const label = el.name.startsWith("arg.") ? el.name.slice(4) : el.name;
  if (el.dataset.json !== undefined && text) {
    try {
      const value = JSON.parse(text);
      const want = el.dataset.json;
      const got = Array.isArray(value) ? "array" : value === null ? "null" : typeof value;
      if (want && got !== want) message = `${label}: must be a JSON ${want}, not ${got}`;
    } catch (err) {
      message = `${label}: not valid JSON (${err.message})`;
    }
  } else if (el.dataset.list !== undefined) {
    const items = text ? text.split("\n").map((s) => s.trim()).filter(Boolean) : [];
    const kind = el.dataset.list;
    const bad = items.find((s) => (kind === "integer" && !/^-?\d+$/.test(s))
      || (kind === "number" && Number.isNaN(Number(s))));
    if (bad !== undefined) message = `${label}: ${JSON.stringify(bad)} is not a ${kind}`;
    else if (el.dataset.minItems && items.length < Number(el.dataset.minItems)) message = `${label}: at least ${el.dataset.minItems} items`;
    else if (el.dataset.maxItems && items.length > Number(el.dataset.maxItems)) message = `${label}: at most ${el.dataset.maxItems} items`;
  }
  el.setCustomValidity(message);
}

function tryForm() {
  const form = document.querySelector("form.try");
  if (!form) return;
  const checked = form.querySelectorAll("textarea[data-json], textarea[data-list]");
  for (const el of checked) {
    el.addEventListener("input", () => checkField(el));
    checkField(el);
  }
  const all = document.getElementById("arguments_json");
  if (!all) return;
  all.dataset.json = "object";
  const toggle = () => {
    // Arguments given as JSON replace the fields: their checks do not apply then.
    const whole = all.value.trim() !== "";
    for (const el of form.querySelectorAll("[name^='arg.']")) el.disabled = whole;
    checkField(all);
  };
  all.addEventListener("input", toggle);
  toggle();
}

document.addEventListener("DOMContentLoaded", livePage);
document.addEventListener("DOMContentLoaded", tryForm);
