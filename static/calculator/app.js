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

// The one-click runtime defaults (data-preset: the fields they set) keep every other input of
// the page; rendered with the page, their href would bring back the inputs it loaded with, so
// each takes the current URL with its own fields replaced, at the moment it is used.
function syncPresetLinks(event) {
  const link = event.target.closest ? event.target.closest("a[data-preset]") : null;
  if (!link) return;
  const params = new URLSearchParams(location.search);
  new URLSearchParams(link.dataset.preset).forEach((value, key) => params.set(key, value));
  link.href = location.pathname + "?" + params.toString();
}
["pointerdown", "focusin", "click"].forEach((type) => document.addEventListener(type, syncPresetLinks, true));

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
document.addEventListener("input", (event) => {
  const form = event.target.closest && event.target.closest("#calc");
  if (form) showState("data-pending", form.dataset.msgPending);
});
document.addEventListener("change", (event) => {
  const form = event.target.closest && event.target.closest("#calc");
  if (form) showState("data-pending", form.dataset.msgPending);
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
