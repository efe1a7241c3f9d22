#!/usr/bin/env python3
"""Runs examples/desktop in a virtual X server (Xvfb) and checks a
screenshot of the screen: the window must show the simulation, not a blank
or single-coloured area.

Starts Xvfb (black root window), runs the example for a fixed number of
frames, losing its GPU device on purpose part way (`--lose-at`), waits for
its `ready:` line (its last frame is presented and it holds the window
open), checks that a `recovered:` line came before it (the example opened
a new device and resumed from its last checkpoint), grabs the whole screen
with `xwd`, and checks the example then exits cleanly. Saves the screenshot
as target/desktop.png. Exits non-zero on failure.

Usage: scripts/check_desktop.py [EXAMPLE_BINARY]
(default target/debug/examples/desktop, built by `cargo build --example
desktop`). Needs Xvfb and xwd (Debian: xvfb, x11-apps).
"""

import os
import struct
import subprocess
import sys
import threading
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCREEN = (800, 600)
FRAMES = 40
LOSE_AT = 15
HOLD_MS = 5000
TIMEOUT_S = 180


def start_xvfb():
    """Starts Xvfb on a free display; returns (process, ":N")."""
    read_fd, write_fd = os.pipe()
    xvfb = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write_fd), "-screen", "0",
         "%dx%dx24" % SCREEN, "-br", "-nolisten", "tcp"],
        pass_fds=[write_fd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write_fd)
    number = b""
    with os.fdopen(read_fd, "rb") as pipe:
        while not number.endswith(b"\n"):
            chunk = pipe.read(1)
            if not chunk:
                sys.exit("Xvfb exited before naming its display")
            number += chunk
    return xvfb, ":" + number.decode().strip()


def read_xwd(data):
    """Decodes an xwd dump (ZPixmap, 24 or 32 bits a pixel) to
    (width, height, [(r, g, b), ...])."""
    fields = struct.unpack(">25I", data[:100])
    header_size, _, pixmap_format = fields[0:3]
    width, height = fields[4], fields[5]
    byte_order, bits_per_pixel, bytes_per_line = fields[7], fields[11], fields[12]
    masks = fields[14:17]
    colours = fields[19]
    if pixmap_format != 2 or bits_per_pixel not in (24, 32):
        sys.exit("unexpected xwd format %d with %d bits a pixel"
                 % (pixmap_format, bits_per_pixel))
    start = header_size + 12 * colours
    step = bits_per_pixel // 8
    order = "little" if byte_order == 0 else "big"

    def channel(value, mask):
        shift = (mask & -mask).bit_length() - 1
        return (value & mask) >> shift

    pixels = []
    for y in range(height):
        row = data[start + y * bytes_per_line:]
        for x in range(width):
            value = int.from_bytes(row[x * step:(x + 1) * step], order)
            pixels.append(tuple(channel(value, m) for m in masks))
    return width, height, pixels


def write_png(path, width, height, pixels):
    rows = b"".join(
        b"\0" + bytes(c for p in pixels[y * width:(y + 1) * width] for c in p)
        for y in range(height))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body)))

    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n")
        f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)))
        f.write(chunk(b"IDAT", zlib.compress(rows)))
        f.write(chunk(b"IEND", b""))


def main():
    binary = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, "target", "debug", "examples", "desktop")
    if not os.path.exists(binary):
        sys.exit("%s is missing: run cargo build --example desktop first" % binary)
    xvfb, display = start_xvfb()
    env = dict(os.environ, DISPLAY=display)
    env.pop("WAYLAND_DISPLAY", None)
    try:
        app = subprocess.Popen(
            [binary, "--frames", str(FRAMES), "--lose-at", str(LOSE_AT),
             "--hold-ms", str(HOLD_MS)],
            env=env, stdout=subprocess.PIPE, text=True)
        ready = []
        recovered = []

        def read_lines():
            for line in app.stdout:
                if line.startswith("recovered:"):
                    recovered.append(line)
                if line.startswith("ready:"):
                    ready.append(line)

        reader = threading.Thread(target=read_lines, daemon=True)
        reader.start()
        deadline = time.time() + TIMEOUT_S
        while not ready and app.poll() is None and time.time() < deadline:
            time.sleep(0.05)
        if not ready:
            app.kill()
            sys.exit("examples/desktop check failed: no ready line "
                     "(exit status %s)" % app.poll())
        if not recovered:
            app.kill()
            sys.exit("examples/desktop check failed: the device lost at frame "
                     "%d was not recovered (no recovered: line)" % LOSE_AT)
        print(recovered[0].strip())
        print(ready[0].strip())
        # Let the X server take the last presented frame.
        time.sleep(0.5)
        shot = subprocess.run(["xwd", "-root", "-silent", "-display", display],
                              check=True, capture_output=True).stdout
        try:
            status = app.wait(timeout=HOLD_MS / 1000 + 30)
        except subprocess.TimeoutExpired:
            app.kill()
            sys.exit("examples/desktop check failed: it did not exit after holding")
    finally:
        xvfb.terminate()
    width, height, pixels = read_xwd(shot)
    os.makedirs(os.path.join(ROOT, "target"), exist_ok=True)
    write_png(os.path.join(ROOT, "target", "desktop.png"), width, height, pixels)
    lit = sum(1 for p in pixels if p != (0, 0, 0))
    colours = len(set(pixels))
    print("screen: %d of %d pixels lit, %d colours" % (lit, width * height, colours))
    failures = []
    if status != 0:
        failures.append("the example exited with status %d" % status)
    # The window is at least 512 x 512; the seeded patches alone light
    # several thousand of its pixels.
    if lit < 2000 or colours < 16:
        failures.append("the screen is (nearly) blank")
    if failures:
        sys.exit("examples/desktop check failed: " + "; ".join(failures))
    print("examples/desktop check passed (screenshot: target/desktop.png)")


if __name__ == "__main__":
    main()
