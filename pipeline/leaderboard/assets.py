"""The site's shared stylesheet and the replay stepper (plain JavaScript, no external library)."""

SITE_CSS = """\
body { font-family: DejaVu Sans, Helvetica, Arial, sans-serif; margin: 0 auto; max-width: 1100px;
       padding: 0 1em; color: #222; line-height: 1.4; }
header nav { padding: .6em 0; border-bottom: 1px solid #ccc; }
footer.stamp { margin: 2em 0 1em; padding-top: .5em; border-top: 1px solid #ccc; font-size: .8em; color: #555; }
p.version { margin: .3em 0 0; font-size: .8em; color: #555; }
section.release { border-top: 1px solid #ddd; }
table { border-collapse: collapse; margin: .5em 0 1em; }
th, td { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f3f3f3; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.muted { color: #777; }
.ns { color: #8a5a00; font-size: .9em; }
.ns details summary { cursor: pointer; }
body.models-only tr.bot { display: none; }
.unsettled { border-left: 4px solid #D55E00; padding: .3em .6em; background: #fdf1ea; }
.text { white-space: pre-wrap; word-break: break-word; }
pre.code { background: #f7f7f7; padding: .6em; overflow-x: auto; border: 1px solid #e3e3e3; }
.stepper { position: sticky; top: 0; background: #fff; padding: .5em 0; border-bottom: 1px solid #eee; }
.stepper button { font-size: 1em; margin-right: .4em; }
.step { margin: 1em 0; padding: .2em 1em 1em; border-left: 4px solid #0072B2; }
.msg { margin: .3em 0; }
.seat { font-weight: bold; }
.tag { display: inline-block; font-size: .8em; padding: 0 .4em; border-radius: 3px; background: #eee; margin-left: .3em; }
.tag.bad { background: #f6d3c4; }
.tag.good { background: #cfe8dc; }
.tokens { white-space: pre-wrap; font-family: DejaVu Sans Mono, monospace; line-height: 1.8; }
.tok { border-radius: 2px; }
.bar { display: inline-block; height: .8em; background: #0072B2; vertical-align: middle; }
.charts img { max-width: 100%; border: 1px solid #eee; margin: .3em 0; }
.pages a { margin-right: .4em; }
"""

REPLAY_JS = """\
// Step through a replay: one .step section visible at a time; prev/next buttons, arrow keys.
(function () {
  "use strict";
  function setup() {
    var steps = Array.prototype.slice.call(document.querySelectorAll(".step"));
    var bar = document.getElementById("stepper");
    if (!bar || steps.length < 2) { return; }
    var prev = document.getElementById("step-prev");
    var next = document.getElementById("step-next");
    var all = document.getElementById("step-all");
    var label = document.getElementById("step-label");
    var current = 0;
    var showingAll = false;
    var match = /^#step-(\\d+)$/.exec(window.location.hash);
    if (match) { current = Math.min(Math.max(parseInt(match[1], 10) - 1, 0), steps.length - 1); }
    function show(index) {
      current = Math.min(Math.max(index, 0), steps.length - 1);
      showingAll = false;
      steps.forEach(function (step, i) { step.hidden = i !== current; });
      label.textContent = (steps[current].getAttribute("data-title") || "") +
        " (" + (current + 1) + " of " + steps.length + ")";
      prev.disabled = current === 0;
      next.disabled = current === steps.length - 1;
      all.textContent = "show all";
    }
    prev.addEventListener("click", function () { show(current - 1); });
    next.addEventListener("click", function () { show(current + 1); });
    all.addEventListener("click", function () {
      if (showingAll) { show(current); return; }
      showingAll = true;
      steps.forEach(function (step) { step.hidden = false; });
      label.textContent = "all " + steps.length + " steps";
      prev.disabled = true; next.disabled = true;
      all.textContent = "step through";
    });
    document.addEventListener("keydown", function (event) {
      if (showingAll) { return; }
      if (event.key === "ArrowLeft") { show(current - 1); }
      if (event.key === "ArrowRight") { show(current + 1); }
    });
    bar.hidden = false;
    show(current);
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", setup); }
  else { setup(); }
})();
"""
