// The one thing htmx cannot do: copy to the clipboard, the Markdown summary (fetched) or the
// text of the element a data-copy button names by id.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-markdown], [data-copy]");
  if (!button) return;
  let text;
  if (button.dataset.copyMarkdown) {
    text = await (await fetch(button.dataset.copyMarkdown)).text();
  } else {
    const source = document.getElementById(button.dataset.copy);
    if (!source) return;
    text = source.textContent;
  }
  await navigator.clipboard.writeText(text);
  button.textContent = button.dataset.copied || "✔";
});
// Shown only where the page may write to the clipboard (a secure context).
function revealCopyButtons() {
  if (navigator.clipboard) document.querySelectorAll("[data-copy-markdown], [data-copy]").forEach((b) => { b.hidden = false; });
}
document.addEventListener("DOMContentLoaded", revealCopyButtons);
document.addEventListener("htmx:afterSettle", revealCopyButtons);

// The language links carry the page's inputs (?next=…). A recompute changes the URL without
// reloading the page, so each link takes the current URL as it is about to be used: pointer
// down (click, middle click, context menu, touch) or keyboard focus.
function syncLanguageLinks(event) {
  const link = event.target.closest ? event.target.closest("#lang-switch a[hreflang]") : null;
  if (!link) return;
  const url = new URL(link.href, location.href);
  url.searchParams.set("next", location.pathname + location.search);
  link.href = url.pathname + url.search;
}
["pointerdown", "focusin", "click"].forEach((type) => document.addEventListener(type, syncLanguageLinks, true));

// The page's inputs as they are now: the form's fields, a number just typed included (the
// address bar is a recompute behind), empty ones left out; the address bar where no form is.
function currentInputs() {
  const form = document.getElementById("calc");
  if (!form) return new URLSearchParams(location.search);
  const params = new URLSearchParams();
  new FormData(form).forEach((value, key) => { if (typeof value === "string" && value !== "") params.append(key, value); });
  return params;
}

// The one-click runtime defaults (data-preset: the fields they set) keep every other input of
// the page; rendered with the page, their href would bring back the inputs it loaded with, so
// each takes the current inputs with its own fields replaced, at the moment it is used.
function syncPresetLinks(event) {
  const link = event.target.closest ? event.target.closest("a[data-preset]") : null;
  if (!link) return;
  const params = currentInputs();
  new URLSearchParams(link.dataset.preset).forEach((value, key) => params.set(key, value));
  link.href = location.pathname + "?" + params.toString();
}
["pointerdown", "focusin", "click"].forEach((type) => document.addEventListener(type, syncPresetLinks, true));

// A request sent while a field is being typed in says which field (X-Mid-Edit): the server
// then answers "nothing yet" (204) while that field is empty or does not parse (a half-typed
// model name, a number cleared to retype it), so no error flashes up and the last result stays
// until the field makes sense, the typing pauses ("settle" below) or the field loses the focus
// (whose change event asks in full).
document.addEventListener("htmx:configRequest", (event) => {
  const form = document.getElementById("calc");
  const trigger = event.detail.triggeringEvent;
  if (!form || event.detail.elt !== form || !trigger || trigger.type !== "input") return;
  const field = trigger.target;
  // A pasted config waits 900 ms already, and is one paste rather than keystrokes.
  if (field && field.name && field.form === form && field.matches("input")) event.detail.headers["X-Mid-Edit"] = field.name;
});
document.addEventListener("htmx:afterRequest", (event) => {
  const form = document.getElementById("calc");
  if (form && event.detail.elt === form && event.detail.xhr && event.detail.xhr.status === 204) {
    showState("data-pending", null);
  }
});
// A pause in typing is not a keystroke: 800 ms after the last one the form asks in full
// ("settle", no X-Mid-Edit), so a Hub id typed out is looked up, and a value that still does
// not parse gets its message, without leaving the field.
let settleTimer = null;
document.addEventListener("input", (event) => {
  const form = document.getElementById("calc");
  const field = event.target;
  if (!form || field.form !== form || !field.matches("input[type=number], #id_model")) return;
  clearTimeout(settleTimer);
  settleTimer = setTimeout(() => { if (window.htmx) htmx.trigger(form, "settle"); }, 800);
});
document.addEventListener("change", () => clearTimeout(settleTimer));

// A pasted config can be far longer than a URL may be (gunicorn refuses request lines over
// 8190 bytes): the page posts it instead; the server answers with a short permalink.
document.addEventListener("htmx:configRequest", (event) => {
  const form = event.detail.elt.closest ? event.detail.elt.closest("#calc") : null;
  if (!form || event.detail.elt !== form) return;
  const source = form.querySelector("input[name=source]:checked");
  if (source && source.value === "config") {
    event.detail.verb = "post";
    event.detail.useUrlParams = false;
    event.detail.headers["Content-Type"] = "application/x-www-form-urlencoded";
  }
});

// "Calculating…" from the first keystroke (during the debounce too) until the answer arrives;
// a request that fails says so instead of leaving the previous numbers unexplained.
function resultState() { return document.getElementById("result-state"); }
function showState(attribute, message) {
  const state = resultState();
  if (!state) return;
  if (message) state.setAttribute(attribute, message); else state.removeAttribute(attribute);
}
// An answer sent before the latest keystroke clears the sign when it lands (its #result-state
// comes without it), though the keystroke's own answer is still to come: such an answer puts
// it back.
let lastEdit = 0;
function edited(event) {
  const form = event.target.closest && event.target.closest("#calc");
  if (!form) return;
  lastEdit = performance.now();
  showState("data-pending", form.dataset.msgPending);
}
document.addEventListener("input", edited);
document.addEventListener("change", edited);
document.addEventListener("htmx:beforeSend", (event) => {
  if (event.detail.xhr) event.detail.xhr.sentAt = performance.now();
});
document.addEventListener("htmx:afterSettle", (event) => {
  const form = document.getElementById("calc");
  const xhr = event.detail.xhr;
  if (!form || event.detail.elt !== form || !xhr || !xhr.sentAt) return;
  if (lastEdit > xhr.sentAt) showState("data-pending", form.dataset.msgPending);
});
document.addEventListener("htmx:afterRequest", (event) => {
  const form = document.getElementById("calc");
  if (!form || event.detail.elt !== form) return;
  if (event.detail.successful) return;
  const status = event.detail.xhr ? event.detail.xhr.status : 0;
  const message = status === 413 || status === 414 ? form.dataset.msgTooLong : form.dataset.msgFailed;
  const state = resultState();
  if (state) {
    state.setAttribute("data-stale", "true");
    state.setAttribute("data-pending", message);
    state.setAttribute("role", "alert");
  }
});
document.addEventListener("htmx:sendError", (event) => {
  const form = document.getElementById("calc");
  if (!form || event.detail.elt !== form) return;
  const state = resultState();
  if (state) {
    state.setAttribute("data-stale", "true");
    state.setAttribute("data-pending", form.dataset.msgFailed);
    state.setAttribute("role", "alert");
  }
});

// Fields the chosen mode and runtime do not read (the page hides them) are disabled, so they stay
// out of the request and of the address bar: links stay short and say what was used. Their
// wrappers name the modes and runtimes that read them (data-modes, data-runtimes).
function syncRuntimeFields(form) {
  const mode = form.querySelector("select[name=mode]");
  const runtime = form.querySelector("select[name=runtime]");
  const value = mode ? mode.value : "inference";
  // Training runs on transformers whatever the runtime select says.
  const active = value === "inference" && runtime ? runtime.value : "transformers";
  const reads = (box, list, name) => !(list in box.dataset) || box.dataset[list].split(" ").includes(name);
  const applies = (box) => reads(box, "modes", value) && reads(box, "runtimes", active);
  const scoped = "[data-modes], [data-runtimes]";
  form.querySelectorAll("input, select, textarea").forEach((field) => {
    let box = field.closest(scoped);
    if (!box) return;
    let on = true;
    for (; box; box = box.parentElement && box.parentElement.closest(scoped)) on = on && applies(box);
    field.disabled = !on;
  });
}
document.addEventListener("change", (event) => {
  const form = event.target.closest && event.target.closest("#calc");
  if (form) syncRuntimeFields(form);
}, true);
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("calc");
  if (form) syncRuntimeFields(form);
});

// A link in the result (a lever, "Did you mean", an export) is built from the inputs that
// result was computed for. Pressed right after a number was typed, its mousedown blurs the
// field; the recompute the blur starts used to replace the result under the pointer before the
// button came up, so the click landed nowhere, and the link would have dropped the number
// anyway (walkthrough persona 1, defect 5). So such a link takes the form's inputs as they are
// now with its own changes applied, and while it is held no recompute is sent or swapped in.
const RESULT_LINKS = "#result a[href^='?'], .calc-form .field-errors a[href^='?']";
let heldLink = null;
let heldBack = false;
function resultLink(event) {
  const link = event.target.closest ? event.target.closest(RESULT_LINKS) : null;
  return link && document.getElementById("calc") ? link : null;
}
function retarget(link) {
  const result = document.getElementById("result");
  const base = new URLSearchParams(result ? result.dataset.query || "" : "");
  const target = new URLSearchParams(link.getAttribute("href").slice(1));
  const params = currentInputs();
  new Set([...base.keys(), ...target.keys()]).forEach((key) => {
    const was = base.getAll(key).join("\u0000");
    const now = target.getAll(key).join("\u0000");
    if (was === now) return;
    params.delete(key);
    target.getAll(key).forEach((value) => params.append(key, value));
  });
  // Still a query-only link, so it matches RESULT_LINKS when pressed again.
  link.setAttribute("href", "?" + params.toString());
}
document.addEventListener("pointerdown", (event) => {
  const link = resultLink(event);
  if (!link) return;
  retarget(link);
  if (event.button === 0) heldLink = link;
}, true);
document.addEventListener("mousedown", (event) => {
  // Keeping the focus in the field keeps its change (and the recompute) from firing now.
  if (heldLink && event.button === 0 && resultLink(event) === heldLink) event.preventDefault();
}, true);
document.addEventListener("htmx:beforeRequest", (event) => {
  if (!heldLink || event.detail.elt !== document.getElementById("calc")) return;
  heldBack = true;
  event.preventDefault();
});
document.addEventListener("htmx:beforeSwap", (event) => {
  if (heldLink && event.detail.requestConfig && event.detail.requestConfig.elt === document.getElementById("calc")) {
    heldBack = true;
    event.detail.shouldSwap = false;
  }
});
document.addEventListener("click", (event) => {
  const link = resultLink(event);
  if (link) { retarget(link); heldLink = null; heldBack = false; }
}, true);
function letGo() {
  // Released off the link: no click comes, so the recompute held back is sent now.
  setTimeout(() => {
    if (!heldLink) return;
    heldLink = null;
    if (heldBack && window.htmx) { heldBack = false; htmx.trigger("#calc", "submit"); }
  }, 0);
}
// A link dragged away starts a drag, which ends with dragend rather than pointerup.
["pointerup", "pointercancel", "dragend"].forEach((type) => document.addEventListener(type, letGo, true));

// On a phone the result is far below the form: the bar at the foot of the screen (.jump)
// repeats the headline figure and says "Calculating…" while a newer one is on its way
// (walkthrough persona 5, defect 1); once the result itself is on screen it steps aside.
function syncJumpBar() {
  const bar = document.getElementById("jump");
  if (!bar) return;
  const figure = bar.querySelector(".jump-figure");
  const state = resultState();
  const pending = state && !state.hasAttribute("data-stale") ? state.getAttribute("data-pending") : null;
  const total = document.querySelector("#result .headline .total .num");
  const verdict = document.querySelector("#result .headline .verdict");
  // The figure stays (dimmed while a newer one is on its way); the label says why.
  const mark = verdict ? verdict.textContent.trim().charAt(0) : "";
  figure.textContent = total ? `${total.textContent.trim()} GiB ${mark}`.trim() : "";
  bar.querySelector(".jump-label").textContent = pending || bar.dataset.label;
  if (pending) bar.setAttribute("data-pending", ""); else bar.removeAttribute("data-pending");
}
let resultObserver = null;
function watchResult() {
  const bar = document.getElementById("jump");
  const result = document.getElementById("result");
  if (!bar || !result || !window.IntersectionObserver) return;
  if (resultObserver) resultObserver.disconnect();
  resultObserver = new IntersectionObserver((entries) => {
    entries.forEach((entry) => bar.classList.toggle("result-in-view", entry.isIntersecting));
  });
  resultObserver.observe(result);
}
document.addEventListener("DOMContentLoaded", () => { syncJumpBar(); watchResult(); });
document.addEventListener("htmx:afterSettle", () => { syncJumpBar(); watchResult(); });
if (window.MutationObserver) {
  document.addEventListener("DOMContentLoaded", () => {
    // #result-state is swapped out of band with each answer: watch its parent.
    const column = document.querySelector(".result-col");
    if (column) new MutationObserver(syncJumpBar).observe(column, { attributes: true, subtree: true, childList: true, attributeFilter: ["data-pending", "data-stale"] });
  });
}

// "Jump to the result" right after typing: the click's blur starts a recompute, and the
// answer (and the field messages above the result that it clears) move the result after the
// browser has scrolled to where it was (persona 5, defect 2: it landed three screens past it).
// So the jump scrolls now and once more when that answer is in.
document.addEventListener("click", (event) => {
  const bar = event.target.closest ? event.target.closest("#jump") : null;
  if (!bar) return;
  event.preventDefault();
  const go = () => {
    const result = document.getElementById("result");
    if (!result) return;
    result.scrollIntoView({ block: "start" });
    result.focus({ preventScroll: true });
  };
  go();
  const until = Date.now() + 3000;
  const again = (settled) => {
    // Only the recompute's own answer moves the result: the model suggestions (a datalist)
    // or the part loaded after it may settle first, and scrolling then left the answer to
    // move the result after the scroll (the result 1,724 px above the screen once in CI).
    if (!settled.detail.elt || settled.detail.elt.id !== "result") return;
    document.removeEventListener("htmx:afterSettle", again);
    if (Date.now() < until) go();
  };
  document.addEventListener("htmx:afterSettle", again);
  setTimeout(() => document.removeEventListener("htmx:afterSettle", again), 3000);
});
