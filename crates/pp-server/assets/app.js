// Placeholder console: checks the server and the session, then shows a summary.
// The web console replaces this file. No inline scripts: the CSP forbids them.
"use strict";

const NOT_LOGGED_IN =
  "Not logged in: run `pocketpilot serve` and open the login link it prints.";

function show(id, text, isError) {
  const element = document.getElementById(id);
  element.textContent = text;
  element.hidden = false;
  element.classList.toggle("error", Boolean(isError));
}

async function getJson(path) {
  const response = await fetch(path, { credentials: "same-origin" });
  if (!response.ok) {
    throw new Error(path + " answered " + response.status);
  }
  return response.json();
}

async function start() {
  let health;
  try {
    health = await getJson("/api/health");
  } catch (error) {
    show("status", NOT_LOGGED_IN, true);
    return;
  }
  try {
    const approvals = await getJson("/api/approvals");
    const tasks = await getJson("/api/tasks?limit=20");
    show("status", "Connected. Model: " + health.model + ".");
    show(
      "summary",
      approvals.approvals.length + " approval(s) waiting, " +
        tasks.tasks.length + " recent task(s).",
    );
    document.getElementById("logout").hidden = false;
  } catch (error) {
    show("status", NOT_LOGGED_IN, true);
  }
}

document.addEventListener("DOMContentLoaded", start);
