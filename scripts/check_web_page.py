#!/usr/bin/env python3
"""Loads examples/web in headless Chromium and checks that the page reports
success on the GPU and that what it shows on its canvas is the simulation,
drawn while it runs: not blank at the end, not blank in the middle of the
run, and changed between the two. The page loses its GPU device on purpose
at frame LOSE_AT (`?lose-at=`) and must recover from it once
(`data-recovered="1"`), resuming from its last checkpoint.

Then it picks tests/data/tiny_llama_vocab.gguf in the page's file input
(as a visitor would), generates from the prompt of tiny_llama_vocab.json,
and checks that the page's greedy tokens are NumPy's (`data-ids` of
#lm-status).

Serves examples/web on a free localhost port, drives Chromium through
chromedriver's WebDriver HTTP API (standard library only), takes a
screenshot of the page (what a visitor sees, composited by the browser)
once the page has drawn its first frame and again when #status leaves
"running", and looks at the canvas's rectangle in both. Saves them to
target/web-page-mid.png and target/web-page.png. Exits non-zero on failure.

Usage: scripts/check_web_page.py  (after examples/web/build.sh)
Environment: CHROMEDRIVER (default /usr/bin/chromedriver), CHROMIUM
(default /usr/bin/chromium).
"""

import base64
import functools
import struct
import zlib
import http.server
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE_DIR = os.path.join(ROOT, "examples", "web")
TIMEOUT_S = 120
LOSE_AT = 7
LM_FILE = os.path.join(ROOT, "tests", "data", "tiny_llama_vocab.gguf")
LM_REFERENCE = os.path.join(ROOT, "tests", "data", "tiny_llama_vocab.json")

LM_START_SCRIPT = """
document.getElementById('prompt').value = arguments[0];
document.getElementById('tokens').value = String(arguments[1]);
document.getElementById('generate').click();
"""

LM_STATUS_SCRIPT = """
const e = document.getElementById('lm-status');
return [e.dataset.state, e.textContent, e.dataset.ids || '',
        document.getElementById('generated').textContent];
"""

# The canvas's rectangle in screenshot pixels, inside its border.
RECT_SCRIPT = """
const r = document.getElementById('view').getBoundingClientRect();
const k = window.devicePixelRatio;
return [Math.ceil((r.left + 1) * k), Math.ceil((r.top + 1) * k),
        Math.floor((r.right - 1) * k), Math.floor((r.bottom - 1) * k)];
"""

STATUS_SCRIPT = """
const e = document.getElementById('status');
return [e.dataset.state, e.textContent, Number(e.dataset.frames || 0),
        Number(e.dataset.recovered || 0)];
"""


def read_png(data):
    """Decodes an 8-bit RGB or RGBA, non-interlaced PNG (as Chromium's
    screenshots are) to (width, rows of (r, g, b) tuples)."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("the screenshot is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or colour not in (2, 6) or interlace:
                sys.exit("unexpected screenshot PNG (depth %d, colour type %d)" % (depth, colour))
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    channels = 3 if colour == 2 else 4
    raw = zlib.decompress(idat)
    stride = width * channels
    rows, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - channels] if i >= channels else 0
            b = prev[i]
            c = prev[i - channels] if i >= channels else 0
            if kind == 1:
                line[i] = (line[i] + a) & 255
            elif kind == 2:
                line[i] = (line[i] + b) & 255
            elif kind == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif kind == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pred = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[i] = (line[i] + pred) & 255
        rows.append([tuple(line[x * channels:x * channels + 3]) for x in range(width)])
        prev = line
    return width, rows


def canvas_pixels(shot, rect):
    """The (r, g, b) pixels of the screenshot inside rect."""
    _, rows = read_png(shot)
    left, top, right, bottom = rect
    return [p for row in rows[top:bottom] for p in row[left:right]]


def describe(pixels):
    """(pixels not black, distinct colours, all pixels)."""
    lit = sum(1 for p in pixels if max(p) > 8)
    return lit, len(set(pixels)), len(pixels)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def call(base, method, path, body=None):
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(base + path, data=data, method=method,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        return json.loads(resp.read() or b"null")["value"]


def main():
    if not os.path.exists(os.path.join(PAGE_DIR, "pkg", "web.js")):
        sys.exit("examples/web/pkg is missing: run examples/web/build.sh first")
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=PAGE_DIR)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_port()), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = "http://127.0.0.1:%d/" % server.server_address[1]

    driver_port = free_port()
    driver = subprocess.Popen(
        [os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver"), "--port=%d" % driver_port],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    base = "http://127.0.0.1:%d" % driver_port
    profile = tempfile.mkdtemp(prefix="webtensor-chromium-")
    try:
        for _ in range(100):
            try:
                call(base, "GET", "/status")
                break
            except OSError:
                time.sleep(0.1)
        # Without a GPU, Chromium composites a WebGPU canvas only when its
        # compositor runs on SwiftShader's Vulkan too; with the default
        # flags the page's device is lost ("Device was destroyed") at its
        # first present.
        args = ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu",
                "--use-angle=swiftshader", "--enable-features=Vulkan",
                "--use-vulkan=swiftshader",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + profile, "--window-size=900,1000"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:loggingPrefs": {"browser": "ALL"},
            "goog:chromeOptions": {
                "binary": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                "args": args}}}}
        session = call(base, "POST", "/session", caps)["sessionId"]
        s = "/session/" + session
        try:
            call(base, "POST", s + "/url", {"url": page + "?lose-at=%d" % LOSE_AT})
            state, text, frames, recovered, mid = "running", "", 0, 0, None
            deadline = time.time() + TIMEOUT_S
            while state == "running" and time.time() < deadline:
                time.sleep(0.2)
                state, text, frames, recovered = call(
                    base, "POST", s + "/execute/sync", {"script": STATUS_SCRIPT, "args": []})
                if mid is None and state == "running" and frames >= 1:
                    mid = base64.b64decode(call(base, "GET", s + "/screenshot"))
                    mid_text = text
            shot = base64.b64decode(call(base, "GET", s + "/screenshot"))
            rect = call(base, "POST", s + "/execute/sync", {"script": RECT_SCRIPT, "args": []})
            kind = call(base, "POST", s + "/execute/sync", {
                "script": "return document.getElementById('status').dataset.kind;",
                "args": []})
            notice = call(base, "POST", s + "/execute/sync", {
                "script": "const n = document.getElementById('notice');"
                          "return n.hidden ? '' : n.textContent;",
                "args": []})
            # The language model: the file picked in the file input.
            with open(LM_REFERENCE) as f:
                lm = json.load(f)
            picker = call(base, "POST", s + "/element",
                          {"using": "css selector", "value": "#gguf"})
            picker = list(picker.values())[0]
            call(base, "POST", s + "/element/%s/value" % picker, {"text": LM_FILE})
            call(base, "POST", s + "/execute/sync",
                 {"script": LM_START_SCRIPT, "args": [lm["prompt"], len(lm["greedy"])]})
            lm_state, lm_text, lm_ids, lm_generated = "idle", "", "", ""
            deadline = time.time() + TIMEOUT_S
            while lm_state in ("idle", "running") and time.time() < deadline:
                time.sleep(0.2)
                lm_state, lm_text, lm_ids, lm_generated = call(
                    base, "POST", s + "/execute/sync", {"script": LM_STATUS_SCRIPT, "args": []})
            console = call(base, "POST", s + "/se/log", {"type": "browser"})
        finally:
            call(base, "DELETE", s)
    finally:
        driver.terminate()
        server.shutdown()
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    for name, png in (("web-page.png", shot), ("web-page-mid.png", mid)):
        if png is not None:
            with open(os.path.join(ROOT, "target", name), "wb") as f:
                f.write(png)
    for entry in console:
        print("console %s: %s" % (entry.get("level"), entry.get("message")))
    print("page status: %s (%s), %d frames drawn" % (state, text, frames))
    if notice:
        print("page notice: " + notice)
    failures = []
    if state != "done":
        failures.append("the page did not report success")
    if kind != "Gpu":
        failures.append("the page did not run on the GPU (device kind %r)" % kind)
    if frames < 2:
        failures.append("the page drew %d frames, not one every few steps" % frames)
    print("recoveries from a lost device: %d" % recovered)
    if recovered != 1:
        failures.append("the device lost at frame %d was recovered %d times, not once"
                        % (LOSE_AT, recovered))
    end = canvas_pixels(shot, rect)
    print("canvas at the end: %d of %d pixels lit, %d colours"
          % (describe(end)[0], len(end), describe(end)[1]))
    if describe(end)[0] < len(end) // 50 or describe(end)[1] < 16:
        failures.append("the canvas is (nearly) blank at the end")
    if mid is None:
        failures.append("no frame was seen while the page was running")
    else:
        during = canvas_pixels(mid, rect)
        print("canvas while running (%s): %d pixels lit, %d colours"
              % (mid_text, describe(during)[0], describe(during)[1]))
        if describe(during)[0] < len(during) // 50 or describe(during)[1] < 16:
            failures.append("the canvas is (nearly) blank while running")
        changed = sum(1 for a, b in zip(during, end) if a != b)
        if changed < len(end) // 100:
            failures.append("the canvas did not change while the page ran")
    print("language model: %s (%s): %r" % (lm_state, lm_text, lm_generated))
    ids = [int(i) for i in lm_ids.split(",") if i]
    if lm_state != "done":
        failures.append("the language model did not finish")
    elif ids != lm["greedy"]:
        failures.append("the page's greedy tokens %s are not NumPy's %s" % (ids, lm["greedy"]))
    elif not lm_generated.startswith(lm["prompt"]) or len(lm_generated) <= len(lm["prompt"]):
        failures.append("the page did not show the prompt and its continuation")
    if failures:
        sys.exit("examples/web check failed: " + "; ".join(failures))
    print("examples/web check passed (screenshots: target/web-page-mid.png, "
          "target/web-page.png)")


if __name__ == "__main__":
    main()
