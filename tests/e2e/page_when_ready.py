#!/usr/bin/env python3
"""Opens URL in headless Chromium and prints its DOM once the page says it is done
(<body data-ready="true">), waiting in real time: for pages whose work goes on after their
requests are answered (a streamed answer read as it comes), which --dump-dom with a virtual-time
budget would cut short. Drives Chromium over --remote-debugging-pipe (the DevTools protocol as
NUL-terminated JSON on fds 3 and 4), Python's standard library only.
  page_when_ready.py CHROMIUM PROFILE_DIR URL [SECONDS (60)]
Exit 1 (with what it saw) when the page is not ready in time."""
import json
import os
import subprocess
import sys
import time


def main():
    program, profile, url = sys.argv[1:4]
    limit = float(sys.argv[4]) if len(sys.argv) > 4 else 60.0
    to_browser_r, to_browser_w = os.pipe()
    from_browser_r, from_browser_w = os.pipe()
    def pipe_fds():  # in the child: Chromium reads commands on fd 3 and writes answers on fd 4
        read, write = os.dup(to_browser_r), os.dup(from_browser_w)  # above 4: neither clobbers the other
        os.dup2(read, 3)
        os.dup2(write, 4)

    child = subprocess.Popen(
        [program, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--remote-debugging-pipe",
         "--user-data-dir=" + profile, "about:blank"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        pass_fds=(3, 4), preexec_fn=pipe_fds)
    os.close(to_browser_r)
    os.close(from_browser_w)
    out = os.fdopen(to_browser_w, "wb", buffering=0)
    inp = os.fdopen(from_browser_r, "rb", buffering=0)
    pending = b""
    ids = [0]

    def send(method, params=None, session=None):
        ids[0] += 1
        message = {"id": ids[0], "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        out.write(json.dumps(message).encode() + b"\0")
        return ids[0]

    def answer(wanted):
        nonlocal pending
        while True:
            while b"\0" in pending:
                raw, pending = pending.split(b"\0", 1)
                message = json.loads(raw)
                if message.get("id") == wanted:
                    if "error" in message:
                        raise SystemExit("page_when_ready: " + json.dumps(message["error"]))
                    return message["result"]
            data = inp.read(65536)
            if not data:
                raise SystemExit("page_when_ready: Chromium closed the pipe")
            pending += data

    try:
        target = answer(send("Target.createTarget", {"url": url}))["targetId"]
        session = answer(send("Target.attachToTarget", {"targetId": target, "flatten": True}))["sessionId"]
        deadline = time.monotonic() + limit
        expression = ("document.body && document.body.getAttribute('data-ready') === 'true' ? "
                      "document.documentElement.outerHTML : null")
        while True:
            result = answer(send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session))
            dom = result.get("result", {}).get("value")
            if dom is not None:
                print("<!DOCTYPE html>\n" + dom)
                return 0
            if time.monotonic() > deadline:
                seen = answer(send("Runtime.evaluate", {"expression": "document.documentElement.outerHTML",
                                                         "returnByValue": True}, session))
                print(seen.get("result", {}).get("value", ""))
                print(f"page_when_ready: the page was not ready within {limit} s", file=sys.stderr)
                return 1
            time.sleep(0.1)
    finally:
        try:
            send("Browser.close")
        except OSError:
            pass
        try:
            child.wait(timeout=10)
        except subprocess.TimeoutExpired:
            child.kill()


if __name__ == "__main__":
    sys.exit(main())
