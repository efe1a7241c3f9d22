#!/usr/bin/env python3
"""Loads examples/web in headless Chromium and checks that the page reports
success on the GPU and that its canvas is not blank.

Serves examples/web on a free localhost port, drives Chromium through
chromedriver's WebDriver HTTP API (standard library only), waits for the
page's #status to leave "running", then reads the canvas pixels back in the
page. Saves a screenshot to target/web-page.png. Exits non-zero on failure.

Usage: scripts/check_web_page.py  (after examples/web/build.sh)
Environment: CHROMEDRIVER (default /usr/bin/chromedriver), CHROMIUM
(default /usr/bin/chromium).
"""

import base64
import functools
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

# Counts the pixels that differ from the top-left one and the distinct
# colours, over the whole canvas.
CANVAS_SCRIPT = """
const c = document.getElementById('view');
const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
let differ = 0; const colours = new Set();
for (let i = 0; i < d.length; i += 4) {
  if (d[i] !== d[0] || d[i + 1] !== d[1] || d[i + 2] !== d[2]) differ++;
  colours.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
}
return {differ: differ, colours: colours.size, pixels: d.length / 4};
"""


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
        args = ["--headless=new", "--no-sandbox", "--enable-unsafe-webgpu",
                "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync",
                "--user-data-dir=" + profile, "--window-size=800,800"]
        caps = {"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": os.environ.get("CHROMIUM", "/usr/bin/chromium"),
                "args": args}}}}
        session = call(base, "POST", "/session", caps)["sessionId"]
        s = "/session/" + session
        try:
            call(base, "POST", s + "/url", {"url": page})
            state, text = "running", ""
            deadline = time.time() + TIMEOUT_S
            while state == "running" and time.time() < deadline:
                time.sleep(0.5)
                state, text = call(base, "POST", s + "/execute/sync", {
                    "script": "const e = document.getElementById('status');"
                              "return [e.dataset.state, e.textContent];",
                    "args": []})
            shot = call(base, "GET", s + "/screenshot")
            os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
            with open(os.path.join(ROOT, "target", "web-page.png"), "wb") as f:
                f.write(base64.b64decode(shot))
            kind = call(base, "POST", s + "/execute/sync", {
                "script": "return document.getElementById('status').dataset.kind;",
                "args": []})
            canvas = call(base, "POST", s + "/execute/sync",
                          {"script": CANVAS_SCRIPT, "args": []})
        finally:
            call(base, "DELETE", s)
    finally:
        driver.terminate()
        server.shutdown()
    print("page status: %s (%s)" % (state, text))
    print("canvas: %(differ)d of %(pixels)d pixels differ from the corner, "
          "%(colours)d colours" % canvas)
    failures = []
    if state != "done":
        failures.append("the page did not report success")
    if kind != "Gpu":
        failures.append("the page did not run on the GPU (device kind %r)" % kind)
    if canvas["differ"] < canvas["pixels"] // 20 or canvas["colours"] < 16:
        failures.append("the canvas is (nearly) blank")
    if failures:
        sys.exit("examples/web check failed: " + "; ".join(failures))
    print("examples/web check passed (screenshot: target/web-page.png)")


if __name__ == "__main__":
    main()
