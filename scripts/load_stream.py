#!/usr/bin/env python3
"""Streamed requests under load, for scripts/load_test.sh: CLIENTS threads, each sending one
sentence per request (POST /v1/translate with "stream": true, server-sent events), back to back
for SECONDS, the sentences of INPUT taken in turn. Python's standard library only.
  load_stream.py PORT INPUT CLIENTS SECONDS
Prints one line:
  RESULT requests seconds first_p50_ms first_p99_ms whole_p50_ms whole_p99_ms errors
where "first" is the time to the first word event and "whole" the time to the done event (an
answer with no word, an empty translation, counts in "whole" only); an error is a status other
than 200, a stream that ends without done, an error event, or a connection that fails."""
import http.client
import json
import sys
import threading
import time


def one(port, sentence):
    """(seconds to the first word or None, seconds to done); raises on any failure."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    try:
        start = time.perf_counter()
        conn.request("POST", "/v1/translate", json.dumps({"text": [sentence], "stream": True}),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"status {resp.status}")
        first, event = None, None
        while True:
            line = resp.readline()
            if not line:
                raise RuntimeError("the stream ended without done")
            line = line.decode().rstrip("\n")
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                if event == "word" and first is None:
                    first = time.perf_counter() - start
                elif event == "done":
                    return first, time.perf_counter() - start
                elif event != "word":
                    raise RuntimeError(f"event {event}")
    finally:
        conn.close()


def percentile(values, q):
    """Nearest-rank percentile of a non-empty list."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return ordered[int(rank) - 1]


def main():
    port, path, clients, seconds = int(sys.argv[1]), sys.argv[2], int(sys.argv[3]), float(sys.argv[4])
    sentences = [line.rstrip("\n") for line in open(path, encoding="utf-8") if line.strip()]
    lock = threading.Lock()
    firsts, wholes, errors, turn = [], [], [0], [0]
    end = time.perf_counter() + seconds

    def client():
        while time.perf_counter() < end:
            with lock:
                sentence = sentences[turn[0] % len(sentences)]
                turn[0] += 1
            try:
                first, whole = one(port, sentence)
            except Exception:  # counted, never fatal: the other clients go on
                with lock:
                    errors[0] += 1
                continue
            with lock:
                wholes.append(whole)
                if first is not None:
                    firsts.append(first)

    start = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    took = time.perf_counter() - start

    def ms(values, q):
        return 1000 * percentile(values, q) if values else float("nan")

    print(f"RESULT {len(wholes)} {took:.3f} {ms(firsts, 50):.3f} {ms(firsts, 99):.3f} "
          f"{ms(wholes, 50):.3f} {ms(wholes, 99):.3f} {errors[0]}")


if __name__ == "__main__":
    main()
