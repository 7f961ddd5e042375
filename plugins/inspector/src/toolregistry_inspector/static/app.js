// toolregistry inspector: the live execution log (polls /api/log for calls newer than the
// last one shown). No framework, no build step; every page works without it.
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

function liveLog() {
  const table = document.getElementById("log-table");
  if (!table) return;
  const tbody = table.tBodies[0];
  const toggle = document.getElementById("live-toggle");
  const status = document.getElementById("live-status");
  let last = Number(table.dataset.last || 0);
  let live = true;
  toggle.addEventListener("click", () => {
    live = !live;
    toggle.setAttribute("aria-pressed", String(live));
    toggle.textContent = live ? "Pause" : "Resume";
    status.textContent = live ? "Live: new calls appear at the top." : "Paused.";
  });
  async function poll() {
    if (live) {
      const params = new URLSearchParams({ after: String(last) });
      if (table.dataset.tool) params.set("tool", table.dataset.tool);
      if (table.dataset.outcome) params.set("outcome", table.dataset.outcome);
      try {
        const response = await fetch(document.body.dataset.base + "/api/log?" + params, { credentials: "same-origin" });
        if (response.ok) {
          const data = await response.json();
          for (const e of data.entries) {
            addEntry(tbody, e);
            last = Math.max(last, e.seq);
          }
          table.dataset.last = String(last);
        }
      } catch (err) {
        status.textContent = "Lost the connection to the inspector; retrying.";
      }
    }
    setTimeout(poll, 700);
  }
  poll();
}

document.addEventListener("DOMContentLoaded", liveLog);
