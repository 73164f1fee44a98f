#!/usr/bin/env python3
"""Mixed traffic against a running `attnmt serve` for a bounded time (scripts/soak_test.sh runs it).

Clients, side by side:
  good       POST /v1/translate and /translator/translate: 1-8 sentences of varied length, beam 1-5,
             n-best up to the beam, attention on some; keep-alive and fresh connections. Must be 200.
  bad        bad JSON, a body that is not UTF-8, oversize bodies, too many sentences, unknown models,
             fields and paths, bad values, no or a wrong API key. Must be the expected 4xx.
  disrupt    raw sockets: headers cut off, a request dropped before its answer (the server must drop
             its sentences), an answer read halfway, and slow senders (a byte every few ms), whose
             answers must still be 200.
  sampler    every interval: the server's RSS, open file descriptors and threads (/proc/PID), and its
             /metrics counters.
Prints one Markdown row per interval and, at the end, checks the targets: no 5xx, no unexpected
status, no client-side error, a good answer in every interval, and no leak (fds and threads flat;
RSS growth under 5% from halfway to the end, judged over 6 rows or more). p99 and RSS are reported,
never failed on otherwise. Exit status 1 when a target is missed. Python 3 standard library only.
"""
import argparse
import http.client
import json
import os
import random
import socket
import statistics
import sys
import threading
import time

LOCK = threading.Lock()


class Interval:
    def __init__(self):
        self.latencies = []  # seconds, good requests that were answered 200
        self.codes = {}  # status -> count, every answered request
        self.unexpected = []  # (what, status, body) of answers that were not what the request called for
        self.disrupted = 0  # disrupt-client actions done
        self.slow_ok = 0


class Soak:
    def __init__(self, args):
        self.args = args
        self.sentences = [l.strip() for l in open(args.input, encoding="utf-8") if l.strip()]
        self.stop = threading.Event()
        self.current = Interval()
        self.rows = []
        self.errors = []  # client-side failures: connections refused or dropped by the server

    def record(self, status, seconds=None, expected=None, what=""):
        with LOCK:
            self.current.codes[status] = self.current.codes.get(status, 0) + 1
            if expected is not None and status not in expected:
                self.current.unexpected.append((what, status))
            if seconds is not None and status == 200:
                self.current.latencies.append(seconds)

    def headers(self, key=True):
        h = {"Content-Type": "application/json"}
        if key and self.args.api_key:
            h["Authorization"] = "Bearer " + self.args.api_key
        return h

    def text(self, rng, n):
        out = []
        for _ in range(n):
            s = rng.choice(self.sentences)
            if rng.random() < 0.3:  # a longer one: two or three sentences joined
                s = " ".join([s] + rng.sample(self.sentences, rng.randint(1, 2)))
            out.append(s)
        return out

    # --- good clients -------------------------------------------------------------------------
    def good(self, seed):
        rng = random.Random(seed)
        conn = None
        while not self.stop.is_set():
            if conn is None or rng.random() < 0.2:  # a fresh connection now and then
                if conn:
                    conn.close()
                conn = http.client.HTTPConnection("127.0.0.1", self.args.port, timeout=120)
            n = rng.choice([1, 1, 1, 2, 3, 5, 8])
            if rng.random() < 0.8:
                beam = rng.randint(1, 5)
                body = {"text": self.text(rng, n), "beam_size": beam, "n_best": rng.randint(1, beam)}
                if rng.random() < 0.2:
                    body["attention"] = True
                path = "/v1/translate"
            else:
                body = [{"src": s, "id": 0} for s in self.text(rng, n)]
                path = "/translator/translate"
            start = time.monotonic()
            try:
                conn.request("POST", path, json.dumps(body), self.headers())
                r = conn.getresponse()
                data = r.read()
                seconds = time.monotonic() - start
                status = r.status
                if status == 200:
                    reply = json.loads(data)
                    got = len(reply["translations"]) if path == "/v1/translate" else len(reply[0])
                    want = n if path == "/v1/translate" else sum(1 for _ in body)
                    if path == "/v1/translate" and got != want:
                        status = -1  # answered 200 with the wrong number of translations
                self.record(status, seconds, {200}, path)
            except (OSError, http.client.HTTPException, ValueError) as e:
                with LOCK:
                    self.errors.append("good %s: %r" % (path, e))
                conn.close()
                conn = None
            time.sleep(rng.uniform(0, self.args.think_ms / 1000.0))

    # --- bad clients --------------------------------------------------------------------------
    def bad_requests(self):
        long_text = "ein Mann " * 600  # > 4096 bytes: 413
        return [
            ("/v1/translate", b'{"text": [', {400}),
            ("/v1/translate", b'{"text": ["\xff\xfe"]}', {400}),
            ("/v1/translate", b'{"text": ["a"], "model": "\xc3"}', {400}),
            ("/v1/translate", b'{"text": "one"}', {400}),
            ("/v1/translate", b'{"text": [1]}', {400}),
            ("/v1/translate", b'{"text": ["a"], "beam_size": 0}', {400}),
            ("/v1/translate", b'{"text": ["a"], "beam_size": 1e400}', {400}),
            ("/v1/translate", b'{"text": ["a"], "beam_size": 18446744073709551615}', {400}),
            ("/v1/translate", b'{"text": ["a"], "beam_size": 2, "n_best": 3}', {400}),
            ("/v1/translate", b'{"text": ["a"], "colour": 1}', {400}),
            ("/v1/translate", b'{"text": ["a"], "model": "nope"}', {404}),
            ("/v1/translate", b'{"text": ["a"], "model": 99}', {404}),
            ("/translator/translate", b'[{"src": "a", "id": "nope"}]', {404}),
            ("/translator/translate", b'{"src": "a"}', {400}),
            ("/v1/translate", json.dumps({"text": ["a"] * 2000}).encode(), {413}),
            ("/v1/translate", json.dumps({"text": [long_text]}).encode(), {413}),
            ("/v1/translate", b'{"text": ["' + b"a" * (2 << 20) + b'"]}', {413}),
            ("/v1/nothing/%ff", b"{}", {404}),
            ("/v1/translate", b"[" * 100000, {400}),
        ]

    def bad(self, seed):
        rng = random.Random(seed)
        cases = self.bad_requests()
        while not self.stop.is_set():
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.args.port, timeout=60)
                if self.args.api_key and rng.random() < 0.15:
                    key = rng.choice([None, "wrong-" + self.args.api_key])
                    h = {"Content-Type": "application/json"}
                    if key:
                        h["Authorization"] = "Bearer " + key
                    conn.request("POST", "/v1/translate", b'{"text": ["a"]}', h)
                    r = conn.getresponse()
                    r.read()
                    self.record(r.status, None, {401}, "no key")
                else:
                    path, body, expected = rng.choice(cases)
                    conn.putrequest("POST", path, skip_accept_encoding=True)
                    for k, v in self.headers().items():
                        conn.putheader(k, v)
                    conn.putheader("Content-Length", str(len(body)))
                    conn.endheaders(body)
                    r = conn.getresponse()
                    r.read()
                    self.record(r.status, None, expected, path + " " + body[:40].decode("latin-1"))
                conn.close()
            except (OSError, http.client.HTTPException) as e:
                # an oversize body may be refused before it is all sent: the answer is then lost with
                # the reset connection; anything else is an error
                if not isinstance(e, (BrokenPipeError, ConnectionResetError)):
                    with LOCK:
                        self.errors.append("bad: %r" % e)
            time.sleep(rng.uniform(0, 4 * self.args.think_ms / 1000.0))  # about one request in five

    # --- clients that misbehave on the socket -------------------------------------------------
    def raw_request(self, body):
        head = "POST /v1/translate HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        if self.args.api_key:
            head += "Authorization: Bearer %s\r\n" % self.args.api_key
        head += "Content-Length: %d\r\n\r\n" % len(body)
        return head.encode() + body

    def disrupt(self, seed):
        rng = random.Random(seed)
        while not self.stop.is_set():
            kind = rng.choice(["cut_headers", "cut_body", "leave", "half_read", "slow"])
            body = json.dumps({"text": self.text(rng, rng.randint(5, 20)), "beam_size": 5}).encode()
            data = self.raw_request(body)
            try:
                s = socket.create_connection(("127.0.0.1", self.args.port), timeout=60)
                if kind == "cut_headers":
                    s.sendall(data[: rng.randint(1, data.index(b"\r\n\r\n"))])
                elif kind == "cut_body":
                    s.sendall(data[: len(data) - rng.randint(1, len(body))])
                elif kind == "leave":  # the whole request, then gone before the answer
                    s.sendall(data)
                    time.sleep(rng.uniform(0, 0.05))
                elif kind == "half_read":
                    s.sendall(data)
                    s.recv(rng.randint(1, 64))
                else:  # slow: a few bytes at a time over about two seconds; must still be answered
                    step = max(1, len(data) // 200)
                    for i in range(0, len(data), step):
                        s.sendall(data[i : i + step])
                        time.sleep(0.01)
                    reply = b""
                    while b"\r\n\r\n" not in reply:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        reply += chunk
                    status = int(reply.split(b" ", 2)[1]) if reply.startswith(b"HTTP/1.1 ") else -2
                    self.record(status, None, {200}, "slow sender")
                s.close()
                with LOCK:
                    self.current.disrupted += 1
            except (OSError, ValueError, IndexError) as e:
                with LOCK:
                    self.errors.append("disrupt %s: %r" % (kind, e))
            time.sleep(rng.uniform(0.05, 0.3))

    # --- the server's state -------------------------------------------------------------------
    def proc(self):
        pid = self.args.pid
        rss = threads = 0
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1]) / 1024.0
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir("/proc/%d/fd" % pid))
        return rss, fds, threads

    def metrics(self):
        conn = http.client.HTTPConnection("127.0.0.1", self.args.port, timeout=30)
        conn.request("GET", "/metrics", headers=self.headers())
        text = conn.getresponse().read().decode()
        conn.close()
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#") and "{" not in line:
                name, value = line.split()
                values[name] = float(value)
        return values

    def sample(self, index, seconds):
        with LOCK:
            done, self.current = self.current, Interval()
        rss, fds, threads = self.proc()
        load = float(open("/proc/loadavg").read().split()[0])  # the machine's, to tell contention from a slower server
        m = self.metrics()
        lat = sorted(done.latencies)

        def pct(p):
            return 1000 * lat[min(len(lat) - 1, int(p * len(lat)))] if lat else float("nan")

        row = {
            "at": index,
            "seconds": seconds,
            "answered": sum(done.codes.values()),
            "codes": dict(sorted(done.codes.items())),
            "unexpected": done.unexpected,
            "good": len(lat),
            "p50": pct(0.5),
            "p99": pct(0.99),
            "rss": rss,
            "fds": fds,
            "threads": threads,
            "load": load,
            "disrupted": done.disrupted,
            "dropped": m.get("attnmt_sentences_dropped_total", 0),
            "abandoned": m.get("attnmt_requests_abandoned_total", 0),
        }
        self.rows.append(row)
        codes = " ".join("%s:%d" % (k, v) for k, v in row["codes"].items() if k != 200)
        print("| %s | %d | %d | %s | %.0f | %.0f | %.1f | %d | %d | %d | %d | %.1f |" % (
            self.label(index), row["answered"], row["codes"].get(200, 0), codes or "-", row["p50"], row["p99"],
            row["rss"], row["fds"], row["threads"], row["disrupted"], row["dropped"], row["load"]), flush=True)

    def label(self, index):
        end = index * self.args.interval
        return "%d:%02d" % (end // 60, end % 60)

    def run(self):
        threads = [threading.Thread(target=self.good, args=(i,), daemon=True) for i in range(self.args.clients)]
        threads.append(threading.Thread(target=self.bad, args=(1000,), daemon=True))
        threads += [threading.Thread(target=self.disrupt, args=(2000 + i,), daemon=True) for i in range(2)]
        print("| at (m:ss) | answered | 200 | other codes | p50 ms | p99 ms | RSS MiB | fds | threads | "
              "disruptions | sentences dropped (total) | load avg |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|", flush=True)
        for t in threads:
            t.start()
        start = time.monotonic()
        total = self.args.minutes * 60
        index = 0
        while time.monotonic() - start < total:
            index += 1
            next_at = start + min(total, index * self.args.interval)
            while time.monotonic() < next_at:
                time.sleep(min(1.0, max(0.0, next_at - time.monotonic())))
                if self.server_gone():
                    print("soak: the server (pid %d) is gone" % self.args.pid)
                    return 1
            self.sample(index, self.args.interval)
        self.stop.set()
        for t in threads:
            t.join(timeout=130)
        return self.check()

    def server_gone(self):
        try:
            os.kill(self.args.pid, 0)
            return False
        except OSError:
            return True

    def check(self):
        failures = []
        rows = self.rows
        fivexx = sum(v for r in rows for k, v in r["codes"].items() if k >= 500)
        if fivexx:
            failures.append("%d answers were 5xx" % fivexx)
        unexpected = [u for r in rows for u in r["unexpected"]]
        if unexpected:
            failures.append("%d answers had an unexpected status, e.g. %s" % (len(unexpected), unexpected[:5]))
        if self.errors:
            failures.append("%d client-side failures, e.g. %s" % (len(self.errors), self.errors[:5]))
        # Leaks: fds and threads are counts, exact whatever the load. RSS also moves with the
        # allocator's warm-up and the load, so it is judged only where the run is long enough to
        # tell a leak from that: from halfway to the end, over at least 6 rows (the 30-minute
        # soak; CTest's 2-minute run reports it).
        notes = []
        if len(rows) >= 2:
            base, last = rows[0], rows[-1]
            # Open connections come and go with the clients: flat means no more than the first
            # interval's count plus one per client.
            slack = self.args.clients + 4
            if max(r["fds"] for r in rows[1:]) > base["fds"] + slack:
                failures.append("open fds grew: %s" % [r["fds"] for r in rows])
            if max(r["threads"] for r in rows[1:]) > base["threads"]:
                failures.append("threads grew: %s" % [r["threads"] for r in rows])
            half = rows[len(rows) // 2]
            growth = (last["rss"] - half["rss"]) / half["rss"]
            rss = "RSS %+.1f%% from %s to the end (%.1f -> %.1f MiB)" % (
                100 * growth, self.label(half["at"]), half["rss"], last["rss"])
            if len(rows) >= 6 and growth >= 0.05:
                failures.append(rss + ": a leak")
            else:
                notes.append(rss)
            # Latency is reported, never a failure: it measures the machine's other work as much
            # as the server (docs/serving.md).
            worst = max(rows[1:], key=lambda r: r["p99"])
            notes.append("p99 at most %.0f ms (at %s, load average %.1f), %.0f ms in the first interval (load %.1f)" % (
                worst["p99"], self.label(worst["at"]), worst["load"], base["p99"], base["load"]))
        if any(r["good"] == 0 for r in rows):
            failures.append("an interval answered no good request")
        total = {}
        for r in rows:
            for k, v in r["codes"].items():
                total[k] = total.get(k, 0) + v
        print("\nsoak: %d requests answered (%s), %d disruptions, %d sentences dropped for clients that left; "
              "RSS %.1f -> %.1f MiB, fds %d -> %d, threads %d -> %d" % (
                  sum(total.values()), " ".join("%d:%d" % kv for kv in sorted(total.items())),
                  sum(r["disrupted"] for r in rows), rows[-1]["dropped"] if rows else 0,
                  rows[0]["rss"] if rows else 0, rows[-1]["rss"] if rows else 0, rows[0]["fds"] if rows else 0,
                  rows[-1]["fds"] if rows else 0, rows[0]["threads"] if rows else 0,
                  rows[-1]["threads"] if rows else 0))
        if self.args.json:
            with open(self.args.json, "w") as f:
                json.dump({"rows": rows, "totals": total, "failures": failures, "notes": notes, "errors": self.errors[:50]}, f,
                          indent=1)
        for n in notes:
            print("soak: " + n)
        for f in failures:
            print("soak: FAILED: " + f)
        if not failures:
            print("soak: all targets met")
        return 1 if failures else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--input", required=True, help="sentences to translate, one a line")
    p.add_argument("--minutes", type=float, default=3)
    p.add_argument("--interval", type=int, default=60, help="seconds per row")
    p.add_argument("--clients", type=int, default=4, help="good clients")
    p.add_argument("--think-ms", type=float, default=20, help="each client waits up to this between requests")
    p.add_argument("--api-key", default="")
    p.add_argument("--json", default="", help="write the rows here too")
    sys.exit(Soak(p.parse_args()).run())


if __name__ == "__main__":
    main()
