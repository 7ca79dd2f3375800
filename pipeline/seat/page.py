"""The seat's one web page: self-contained (no file, font or script from elsewhere: it works offline).

It polls `state?since=N` every half second and shows the conversation a model in the seat would
get (one block per message, by role), the kind of move asked and its valid moves, a labelled text
area (Ctrl+Enter or the Send button posts `move`), the game's log as it goes on, and the outcome.
Every text it shows is set as text, never parsed as HTML: a model's reply may hold markup.
"""

from __future__ import annotations

import base64
import hashlib

SCRIPT = """
"use strict";
const $ = (id) => document.getElementById(id);
let next = 0;
let shownKey = null;
const answered = new Set();

function el(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined) node.textContent = text;
  if (className) node.className = className;
  return node;
}

function showTurn(turn) {
  if (!turn || answered.has(turn.key)) {
    $("move-section").hidden = true;
    return;
  }
  if (turn.key === shownKey) return;
  shownKey = turn.key;
  const messages = $("messages");
  messages.replaceChildren();
  for (const message of turn.messages) {
    const block = el("article", undefined, "message " + message.role);
    block.append(el("h3", message.role), el("div", message.content, "text"));
    messages.append(block);
  }
  $("kind").textContent = "Move asked: " + turn.kind + (turn.max_words ? " (at most " + turn.max_words + " words)" : "");
  const choices = $("choices");
  choices.replaceChildren();
  if (turn.choices.length) {
    choices.append(el("span", "Valid moves (a click copies one): "));
    for (const choice of turn.choices) {
      const button = el("button", choice, "choice");
      button.type = "button";
      button.addEventListener("click", () => { $("move").value = choice; $("move").focus(); });
      choices.append(button);
    }
  }
  $("move").value = "";
  $("move-section").hidden = false;
  $("move").focus();
}

function logLine(entry) {
  if (entry.type === "turn") return el("li", "Your turn: " + entry.kind, "turn");
  if (entry.type === "move") return el("li", "You sent (" + entry.kind + "): " + entry.text, "mine");
  if (entry.type === "end") return el("li", "Game over: " + entry.summary, "end");
  return el("li", entry.text !== undefined ? entry.text : JSON.stringify(entry), "event");
}

function showOutcome(outcome) {
  $("summary").textContent = outcome.summary;
  $("score").textContent = outcome.score === null ? "" : "Your score: " + outcome.score;
  const rows = $("scores");
  rows.replaceChildren();
  for (const [seat, score] of Object.entries(outcome.scores)) {
    const row = el("tr");
    row.append(el("td", seat), el("td", String(score)));
    rows.append(row);
  }
  $("record").textContent = outcome.record ? "The game is recorded in " + outcome.record : "";
  $("error").textContent = outcome.error || "";
  $("outcome").hidden = false;
  $("move-section").hidden = true;
}

async function poll() {
  try {
    const response = await fetch("state?since=" + next, { cache: "no-store" });
    const state = await response.json();
    document.title = state.title;
    $("title").textContent = state.title;
    const log = $("log");
    for (const entry of state.log) log.append(logLine(entry));
    if (state.log.length) log.lastElementChild.scrollIntoView({ block: "nearest" });
    next = state.next;
    if (state.outcome) {
      showOutcome(state.outcome);
      $("status").textContent = "The game is over.";
      return;
    }
    showTurn(state.turn);
    $("status").textContent = $("move-section").hidden ? "The game goes on; waiting for your next turn." : "Your move.";
  } catch (error) {
    $("status").textContent = "No answer from the seat's server; retrying.";
  }
  setTimeout(poll, 500);
}

async function send() {
  const key = shownKey;
  if (key === null || answered.has(key)) return;
  $("send").disabled = true;
  try {
    const response = await fetch("move", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ key: key, text: $("move").value }),
    });
    if (response.ok) {
      answered.add(key);
      $("move-section").hidden = true;
      $("status").textContent = "Sent. The game goes on.";
    } else {
      $("status").textContent = "Not sent: " + (await response.text());
    }
  } finally {
    $("send").disabled = false;
  }
}

$("move-form").addEventListener("submit", (event) => { event.preventDefault(); send(); });
$("move").addEventListener("keydown", (event) => {
  if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) { event.preventDefault(); send(); }
});
poll();
"""

STYLE = """
body { font: 16px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 60rem; padding: 1rem; color: #1b1b1b; }
h1 { font-size: 1.4rem; } h2 { font-size: 1.1rem; margin-top: 1.5rem; } h3 { font-size: .8rem; margin: 0; }
.message { border-left: 4px solid #888; padding: .3rem .8rem; margin: .5rem 0; background: #f6f6f6; }
.message.system { border-color: #6a4c93; } .message.user { border-color: #1565c0; }
.message.assistant { border-color: #2e7d32; }
.message h3 { text-transform: uppercase; letter-spacing: .05em; color: #444; }
.text, #log li { white-space: pre-wrap; overflow-wrap: anywhere; }
textarea { width: 100%; box-sizing: border-box; font: inherit; }
button { font: inherit; padding: .3rem .9rem; margin: .2rem .3rem .2rem 0; }
#log { max-height: 22rem; overflow-y: auto; border: 1px solid #ccc; padding: .5rem 2rem; }
#log .mine { color: #1565c0; } #log .turn { font-weight: bold; } #log .end { font-weight: bold; color: #2e7d32; }
#error { color: #b00020; }
caption { text-align: left; font-weight: bold; } td, th { padding: .1rem .8rem .1rem 0; text-align: left; }
:focus-visible { outline: 3px solid #1565c0; outline-offset: 2px; }
"""

HTML = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Your seat</title>
<style>{STYLE}</style>
</head>
<body>
<header>
<h1 id="title">Your seat</h1>
<p id="status" role="status" aria-live="polite">Connecting to the game…</p>
</header>
<main>
<section aria-labelledby="conversation-heading">
<h2 id="conversation-heading">What your seat sees</h2>
<div id="messages"><p>The conversation appears at your first turn.</p></div>
</section>
<section id="move-section" aria-labelledby="move-heading" hidden>
<h2 id="move-heading">Your move</h2>
<p id="kind"></p>
<p id="choices"></p>
<form id="move-form">
<label for="move">Your reply, as a model would write it (Ctrl+Enter sends)</label>
<textarea id="move" name="move" rows="6"></textarea>
<button type="submit" id="send">Send</button>
</form>
</section>
<section id="outcome" aria-labelledby="outcome-heading" hidden>
<h2 id="outcome-heading">Game over</h2>
<p id="summary"></p>
<p id="score"></p>
<table><caption>Every seat's score</caption><thead><tr><th scope="col">seat</th><th scope="col">score</th></tr></thead>
<tbody id="scores"></tbody></table>
<p id="record"></p>
<p id="error"></p>
</section>
<section aria-labelledby="log-heading">
<h2 id="log-heading">The game so far</h2>
<ol id="log"></ol>
</section>
</main>
<script>{SCRIPT}</script>
</body>
</html>
"""


def _digest(source: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode("ascii") + "'"


#: the page may run its own script and style and talk to its own server, nothing else
CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; script-src {_digest(SCRIPT)}; style-src {_digest(STYLE)}; connect-src 'self'; "
    "base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
)
