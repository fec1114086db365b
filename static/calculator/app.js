// The one thing htmx cannot do: copy the Markdown summary to the clipboard.
document.addEventListener("click", async (event) => {
  const button = event.target.closest("[data-copy-markdown]");
  if (!button) return;
  const response = await fetch(button.dataset.copyMarkdown);
  await navigator.clipboard.writeText(await response.text());
  button.textContent = button.dataset.copied || "✔";
});
function revealCopyButtons() {
  if (navigator.clipboard) document.querySelectorAll("[data-copy-markdown]").forEach((b) => { b.hidden = false; });
}
document.addEventListener("DOMContentLoaded", revealCopyButtons);
document.addEventListener("htmx:afterSettle", revealCopyButtons);
