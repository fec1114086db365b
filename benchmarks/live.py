"""How live the page is: keystroke to painted figures, in real headless Chromium, on gunicorn.

    make bench-live            (or: .venv/bin/python benchmarks/live.py --rounds 2)

Types into the context, batch and model fields and changes selects (mode, precision, GPU), one
edit at a time, on a page served by gunicorn with production settings. For each edit it takes
the event's own timestamp (keydown, or the select's change) and the moment the result fragment
that answers it has been swapped in and a frame painted after it (htmx:afterSwap, then
requestAnimationFrame and a task). It reports the median, p95 and worst of those times, how many
requests each edit sent (the recompute, and the deferred part it loads), and checks after every
edit that the figure on screen is the server's answer for the inputs now in the form: a stale
result is a failure (exit 1), however fast.

Keystrokes that leave a field not yet making sense (a half-typed model name, a number cleared)
are answered "nothing yet" (204) and paint nothing: they are counted apart, with the time of
that answer.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.serve import gunicorn

CHROMIUM = "/usr/bin/chromium"
START = "/?model=Llama+3.1+8B&gpu=rtx-4090-24gb&seq=4096&batch=1"

# In-page probes: when each edit started, what it sent, and when its answer was painted.
PROBE = """
(() => {
  const bench = window.__bench = { edits: [], inflight: 0, last: 0 };
  const begin = (stamp) => { bench.current = { t0: stamp, sent: 0, more: 0, status: [], painted: null, answered: null }; bench.edits.push(bench.current); };
  document.addEventListener("keydown", (e) => begin(e.timeStamp), true);
  document.addEventListener("change", (e) => { if (e.target.tagName === "SELECT") begin(e.timeStamp); }, true);
  document.addEventListener("htmx:beforeSend", (e) => {
    bench.inflight++; bench.last = performance.now();
    const edit = bench.current; if (!edit) return;
    if (e.detail.elt.id === "calc") { edit.sent++; edit.sentAt = performance.now(); } else if (e.detail.elt.id === "more") edit.more++;
  });
  document.addEventListener("htmx:afterRequest", (e) => {
    bench.inflight = Math.max(0, bench.inflight - 1); bench.last = performance.now();
    const edit = bench.current;
    if (edit && e.detail.elt.id === "calc" && e.detail.xhr) { edit.status.push(e.detail.xhr.status); edit.answered = performance.now(); }
  });
  document.addEventListener("htmx:afterSwap", (e) => {
    const edit = bench.current;
    if (!edit || !e.detail.target || e.detail.target.id !== "result") return;
    requestAnimationFrame(() => setTimeout(() => { edit.painted = performance.now(); bench.last = performance.now(); }, 0));
  });
})();
"""
# An edit is over when its answer is painted (or answered "nothing yet") and the deferred part
# has come, or, for a keystroke that sends nothing, 1.5 s after it: long enough for the longest
# debounce a page has used (900 ms).
IDLE = """() => { const b = window.__bench; const e = b.current; const now = performance.now();
  if (!e || b.inflight !== 0 || now - b.last < 120) return false;
  const done = e.painted !== null || (e.answered !== null && e.status.includes(204));
  return done || now - e.t0 > 1500; }"""
# The server's answer for the inputs in the form now, fetched as the page would ask it.
EXPECTED = """async () => {
  const form = document.getElementById("calc");
  const params = new URLSearchParams();
  new FormData(form).forEach((v, k) => { if (typeof v === "string" && v !== "") params.append(k, v); });
  const response = await fetch(location.pathname + "?" + params, { headers: { "HX-Request": "true" } });
  const html = await response.text();
  const doc = new DOMParser().parseFromString(html, "text/html");
  const total = doc.querySelector(".total .num");
  return [response.status, total ? total.textContent.trim() : null];
}"""


def edits(page) -> list[tuple[str, object]]:
    """(what, action) for one round: about 60 edits."""
    steps: list[tuple[str, object]] = []

    def retype(selector: str, text: str) -> None:
        def select_all(selector: str = selector) -> None:
            page.click(selector)
            page.keyboard.press("Control+A")

        steps.append((f"{selector} select", select_all))
        for char in text:
            steps.append((f"{selector} key", lambda char=char: page.keyboard.type(char)))

    for number in ("8192", "16384", "2048", "32768"):
        retype("#id_seq", number)
    for number in ("4", "16", "2", "8"):
        retype("#id_batch", number)
    retype("#id_model", "Mistral 7B")
    for field, value in (
        ("#id_mode", "lora"),
        ("#id_precision", "int8"),
        ("#id_mode", "qlora"),
        ("#id_gpu", "rtx-3090-24gb"),
        ("#id_mode", "full_finetune"),
        ("#id_precision", "bf16"),
        ("#id_gpu", "h100-sxm-80gb"),
        ("#id_mode", "inference"),
    ):
        steps.append((f"{field} select", lambda f=field, v=value: page.select_option(f, v)))
    return steps


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def run(base: str, rounds: int) -> int:
    from playwright.sync_api import sync_playwright

    painted: list[float] = []
    parts: dict[str, list[float]] = {"wait before sending": [], "server and network": [], "swap and paint": []}  # fmt: skip
    waited: list[float] = []
    requests: list[int] = []
    deferred: list[int] = []
    stale: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.add_init_script(PROBE)
        for _ in range(rounds):
            page.goto(base + START)
            page.wait_for_selector("#result .total")
            page.wait_for_load_state("networkidle")
            for what, action in edits(page):
                action()  # type: ignore[operator]
                page.wait_for_function(IDLE, polling=10)
                if what.endswith("select") and what.startswith(
                    ("#id_seq", "#id_batch", "#id_model")
                ):
                    continue  # selecting the field's text changes nothing
                edit = page.evaluate("() => window.__bench.current")
                requests.append(edit["sent"])
                deferred.append(edit["more"])
                if edit["painted"] is not None:
                    painted.append(edit["painted"] - edit["t0"])
                    if edit.get("sentAt") and edit.get("answered"):
                        parts["wait before sending"].append(edit["sentAt"] - edit["t0"])
                        parts["server and network"].append(edit["answered"] - edit["sentAt"])
                        parts["swap and paint"].append(edit["painted"] - edit["answered"])
                elif edit["answered"] is not None:
                    waited.append(edit["answered"] - edit["t0"])
                status, expected = page.evaluate(EXPECTED)
                shown = page.locator("#result .total .num").first.inner_text().strip()
                if status == 200 and expected is not None and expected != shown:
                    stale.append(f"{what}: shows {shown}, the inputs give {expected}")
        browser.close()
    print(f"Chromium on gunicorn; {len(painted) + len(waited)} edits over {rounds} round(s)\n")
    print("| | edits | median ms | p95 ms | worst ms |")
    print("|---|---:|---:|---:|---:|")
    for label, values in (("keystroke → painted result", painted), ("keystroke → 'nothing yet' (204)", waited)):  # fmt: skip
        if values:
            print(
                f"| {label} | {len(values)} | {statistics.median(values):.0f} | "
                f"{percentile(values, 0.95):.0f} | {max(values):.0f} |"
            )
    for label, values in parts.items():
        if values:
            print(f"| … of which {label} | {len(values)} | {statistics.median(values):.0f} | {percentile(values, 0.95):.0f} | {max(values):.0f} |")  # fmt: skip
    print(
        f"\nrequests per edit: recompute {statistics.mean(requests):.2f} (max {max(requests)}), "
        f"deferred part {statistics.mean(deferred):.2f}; stale results left on screen: {len(stale)}"
    )
    for line in stale:
        print("  stale:", line)
    return 1 if stale else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--root", type=Path, default=None, help="serve another checkout (before/after)"
    )
    args = parser.parse_args()
    with gunicorn(args.workers, **({"root": args.root} if args.root else {})) as base:
        return run(base, args.rounds)


if __name__ == "__main__":
    sys.exit(main())
