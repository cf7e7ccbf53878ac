# Copyright 2026 The hf_seqtemp Authors. Licensed under the Apache License, Version 2.0.
"""The documentation site builds offline with `--strict` (any warning, such as a broken link, an unknown anchor or
an API object that does not resolve, fails it), as `make docs` builds it; and what the build generates is there: the
results index listing every committed result, the results pages read from `benchmarks/`, the decision tables read
from `decision.json`, the API reference; and, in headless chromium, that the math is typeset (KaTeX, vendored) and
no code block is cut off at 1280 px."""

from __future__ import annotations

import html
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    pytest.importorskip("mkdocs", reason="the `docs` extra is not installed (make venv installs it)")
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)]
    result = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert "WARNING" not in result.stderr, result.stderr[-3000:]
    return out


def _text(page: Path) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.read_text(encoding="utf-8")))


def test_the_results_index_lists_every_committed_result_with_its_provenance(site):
    index = (site / "results" / "index.html").read_text(encoding="utf-8")
    results = sorted(p for p in (ROOT / "benchmarks" / "results").rglob("*") if p.suffix in (".json", ".jsonl"))
    for path in results:
        name = path.relative_to(ROOT / "benchmarks" / "results").as_posix()
        assert f'href="data/{name}"' in index, name  # listed, and the file is in the site
        assert (site / "results" / "data" / name).is_file(), name
    assert "<strong>missing</strong>" not in index  # what the index writes for an absent provenance field


def test_the_pages_read_from_benchmarks_and_the_generated_tables_are_in_the_site(site):
    fidelity = _text(site / "results" / "fidelity" / "index.html")
    assert "Temperature fidelity within prompts, on unseen prompts" in fidelity
    assert "Checkable-answer tasks: measured tables" in _text(site / "results" / "tasks" / "index.html")
    routes = _text(site / "routes" / "index.html")
    assert "token-forwards / answer" in routes and "adapter as SMC's proposal, N = 4" in routes
    assert "<!-- decision-tables -->" not in (site / "routes" / "index.html").read_text(encoding="utf-8")
    trainer = _text(site / "api" / "trainer" / "index.html")
    assert "SeqTempConfig" in trainer and "target_temperature" in trainer and "SeqTempTrainer" in trainer


def _api_pages(site: Path) -> dict[str, str]:
    return {page.parent.name: page.read_text(encoding="utf-8") for page in sorted((site / "api").rglob("index.html"))}


def test_the_api_reference_shows_types_and_cross_references_without_markup(site):
    """The doc-builder docstrings read as a reader expects (`docs/hf_docstrings.py`): a type cell holds the type,
    not `` `float`, *optional*, defaults to `0.5` ``; a cross-reference is a link or a name, never `[~a.B]`."""
    pages = _api_pages(site)
    assert {"trainer", "generation", "measuring"} <= set(pages)
    for name, page in pages.items():
        cells = re.findall(r"<td>\s*<code>(.*?)</code>\s*</td>", page, flags=re.DOTALL)
        assert not [cell for cell in cells if "`" in cell or "*optional*" in cell], name
        assert cells or name == "api", name  # every page but the index documents parameters
        text = _text(site / "api" / ("" if name == "api" else name) / "index.html")
        assert "[~" not in text and "[`" not in text and "[<code>" not in page, name
    trainer = pages["trainer"]
    # [`SeqTempTrainer`] in SeqTempConfig's docstring links to the class on the same page
    assert re.search(
        r'<a class="autorefs autorefs-internal"[^>]*href="#hf_seqtemp\.trainer\.trainer\.SeqTempTrainer"', trainer
    )
    assert "autorefs-internal" in pages["generation"] and "autorefs-internal" in pages["measuring"]


def test_the_api_reference_groups_parameters_folds_long_ones_and_renders_lists(site):
    pages = _api_pages(site)
    trainer = _text(site / "api" / "trainer" / "index.html")
    for group in ("Parameters that control the training", "Parameters that control the data preprocessing"):
        assert group in trainer
    assert "Defaults that differ from" in trainer and "[!NOTE]" not in trainer  # an admonition, not a quote
    # loss_type: a short first paragraph in its cell, the rest folded under "More", and no GRPO name left in it
    cell = pages["trainer"].split("<code>loss_type</code>", 1)[1].split("</tr>", 1)[0]
    first = re.search(r"<p>(.*?)</p>", cell, flags=re.DOTALL).group(1)
    assert len(re.sub(r"<[^>]+>", "", first)) < 400 and "<details" in cell and "steps_per_generation" not in cell
    # a docstring's bullet list is a list
    generation = pages["generation"]
    strategies = generation.split('id="hf_seqtemp.generation.routing.seqtemp_generate"', 1)[1]
    assert re.search(r"<ul>\s*<li>\s*<p><code>\"auto\"</code>", strategies)


def test_the_fidelity_page_shows_its_plots_and_the_index_reads(site):
    """Every fidelity plot committed under `benchmarks/results/fidelity/` is shown on the fidelity page (each a link
    to its full size); the results index lists each result with its whole command on a line of its own, and says
    whether its provenance was recorded by the run or backfilled."""
    fidelity = (site / "results" / "fidelity" / "index.html").read_text(encoding="utf-8")
    plots = sorted(p.name for p in (ROOT / "benchmarks" / "results" / "fidelity").glob("*.png"))
    assert len(plots) == 16
    for name in plots:
        assert f'src="../data/fidelity/{name}"' in fidelity, name
        assert (site / "results" / "data" / "fidelity" / name).is_file()
    index = (site / "results" / "index.html").read_text(encoding="utf-8")
    assert "<table>" not in index.split("<article", 1)[1]  # a list: nothing squeezes the command into a column
    recorded = json.loads((ROOT / "benchmarks" / "results" / "fidelity.json").read_text(encoding="utf-8"))
    assert f"command: <code>{html.escape(recorded['provenance']['command'], quote=False)}</code>" in index
    assert "provenance <strong>backfilled</strong>" in index and "provenance recorded by the run" in index


def test_the_install_page_has_the_readme_commands_and_code():
    """`docs/install.md` is the README's install and quick start: every code block on it is one of the README's."""
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```\w*\n.*?^```$", page, flags=re.DOTALL | re.MULTILINE)
    assert len(blocks) >= 4
    assert [block for block in blocks if block not in readme] == []


def _nav_labels(entries: list, labels: list[str]) -> list[str]:
    for entry in entries:
        if isinstance(entry, str):  # a page without a label: its first heading names it
            first = (ROOT / "docs" / entry).read_text(encoding="utf-8").splitlines()[0]
            labels.append(first.removeprefix("# "))
            continue
        ((label, target),) = entry.items()
        labels.append(label)
        if isinstance(target, list):
            _nav_labels(target, labels)
    return labels


def test_every_label_in_the_nav_is_unique():
    yaml = pytest.importorskip("yaml")
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))["nav"]
    labels = _nav_labels(nav, [])
    assert len(labels) > 20 and sorted({label for label in labels if labels.count(label) > 1}) == []
    assert labels[:2] == ["Home", "Install and quick start"]


def test_the_site_loads_its_scripts_styles_and_fonts_from_itself(site):
    """No page loads a script or a stylesheet from another host (a CDN), and KaTeX's fonts are in the site."""
    for page in site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        loaded = re.findall(r'<script[^>]+src="([^"]+)"|<link[^>]+href="([^"]+)"', text)
        remote = [url for pair in loaded for url in pair if re.match(r"^(https?:)?//", url)]
        assert remote == [], page
    concepts = (site / "concepts" / "index.html").read_text(encoding="utf-8")
    assert 'src="../assets/katex/katex.min.js"' in concepts and '<span class="arithmatex">' in concepts
    css = (site / "assets" / "katex" / "katex.min.css").read_text(encoding="utf-8")
    fonts = re.findall(r"url\((fonts/[^)]+\.woff2)\)", css)
    assert fonts and all((site / "assets" / "katex" / font).is_file() for font in fonts)


# The pages' rendering in a real browser (Debian's chromium, headless): the math is typeset by the vendored KaTeX and
# no code block is wider than its box. One probe page, added to the built site, loads each page in a frame 1280 px
# wide, measures it once its scripts ran and writes what it found into the DOM that chromium dumps.
RENDERED = {  # page: (it has math, it has code blocks)
    "": (True, False),
    "install": (True, True),
    "concepts": (True, False),
    "sampling": (True, True),
    "training": (True, True),
    "measuring": (True, True),
    "evaluate": (True, True),
    "routes": (True, False),
    "models": (True, False),
    "cli": (False, True),
    "results/overview": (True, True),
}
PROBE = """<!doctype html><html><body><pre id="render-probe"></pre><script>
function measure(doc) {
  var content = doc.querySelector("article.md-content__inner"), right = content.getBoundingClientRect().right;
  var visible = content.cloneNode(true);
  visible.querySelectorAll(".katex, pre, code, script").forEach(function (e) { e.remove(); });
  return {
    katex: content.querySelectorAll(".katex").length,
    unrendered: Array.from(content.querySelectorAll(".arithmatex")).filter(function (e) {
      return !e.querySelector(".katex"); }).length,
    errors: content.querySelectorAll(".katex-error").length,
    raw: visible.textContent.match(/[\\^_]\\{[^}]{0,20}\\}?/g) || [],
    code: Array.from(content.querySelectorAll("pre > code")).map(function (c) {
      return [c.scrollWidth, c.clientWidth, c.getBoundingClientRect().right - right]; }),
  };
}
var pages = PAGES, found = {}, pending = pages.length;
pages.forEach(function (page) {
  var frame = document.createElement("iframe");
  frame.style.width = "1280px"; frame.style.height = "900px";
  frame.onload = function () { setTimeout(function () {
    try { found[page] = measure(frame.contentDocument); } catch (error) { found[page] = String(error); }
    if (--pending === 0) document.getElementById("render-probe").textContent = JSON.stringify(found);
  }, 300); };
  frame.src = page ? page + "/" : "./";
  document.body.appendChild(frame);
});
</script></body></html>"""
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync", "--window-size=1280,900",
    "--virtual-time-budget=5000",
]  # fmt: skip


@pytest.fixture(scope="module")
def browser(site, tmp_path_factory):
    """Runs chromium on a page of the site, served on localhost, and returns what it wrote to stdout."""
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        reason = "chromium is not installed: `apt-get install -y chromium` (Debian's package; .ci/run installs it)"
        if os.environ.get("CI"):
            pytest.fail(f"{reason}; CI renders the docs in it")
        pytest.skip(reason)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, directory=str(site), **kwargs)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    profile = tmp_path_factory.mktemp("chromium-profile")

    def run(page: str, *flags: str) -> str:
        url = f"http://127.0.0.1:{server.server_address[1]}/{page}"
        command = [chromium, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *flags, url]
        result = subprocess.run(command, check=False, capture_output=True, text=True, timeout=120)
        assert result.returncode == 0, result.stderr[-3000:]
        return result.stdout

    yield run
    server.shutdown()


@pytest.fixture(scope="module")
def rendered(site, browser) -> dict:
    """What the probe measured on each page of `RENDERED` once its scripts ran."""
    (site / "render-probe.html").write_text(PROBE.replace("PAGES", json.dumps(list(RENDERED))), encoding="utf-8")
    dom = browser("render-probe.html", "--dump-dom")
    found = re.search(r'<pre id="render-probe">(.+?)</pre>', dom, flags=re.DOTALL)
    assert found, f"the probe did not finish\n{dom[-2000:]}"
    return json.loads(html.unescape(found.group(1)))


@pytest.mark.parametrize("page", RENDERED)
def test_the_math_is_typeset_and_no_code_block_is_cut_off_in_a_browser(rendered, page):
    found = rendered[page]
    math, code = RENDERED[page]
    assert isinstance(found, dict), found
    assert found["unrendered"] == 0 and found["errors"] == 0 and (found["katex"] > 0) == math, found
    assert found["raw"] == [], f"{page}: raw TeX shows: {found['raw']}"
    assert bool(found["code"]) == code, page
    cut = [box for box in found["code"] if box[0] > box[1] + 1 or box[2] > 1]  # wider than its box, or the page
    assert cut == [], f"{page}: code blocks cut off (scrollWidth, clientWidth, right edge past the content): {cut}"


def test_screenshots_at_1280_px(site, browser, tmp_path_factory):
    """Screenshots of a page with math and of one with long commands, kept in the test's temporary folder."""
    shots = tmp_path_factory.mktemp("screenshots")
    for page in ("concepts", "install"):
        path = shots / f"{page.replace('/', '_')}.png"
        browser(f"{page}/", f"--screenshot={path}")
        assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 20_000, path
