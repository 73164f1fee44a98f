#!/usr/bin/env python3
"""Time to the first word of `attnmt serve`'s streamed answers (POST /v1/translate with "stream":
true), against the whole answer, streamed and not: one client, one sentence per request, each
sentence sent streamed and not streamed in turn (A/B alternating, which of the two goes first
alternating too), so that the machine's other load falls on both alike. Python's standard library only.
  bench_stream.py PORT INPUT [SENTENCES] [BEAM ...]
Prints a row per beam size: medians (and p90) of the time to the first word event, of the streamed
answer's whole time (to its done event) and of the answer not streamed, and their ratio; then the
time of POST /v1/alternatives (k 5, the served beam) after the first half of each sentence's
translation, against that of the translation itself. With FLOOR ("BEAM:ENCODER_MS:STEP_MS ...", what
bench_stream.sh measures by translate --profile), also the mean time to the first word against the
mean encoder time plus one decoder step."""
import http.client
import json
import os
import statistics
import sys
import time


def streamed(port, body):
    """(seconds to the first word event or None, seconds to the done event, the words' text, done's data)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    conn.request("POST", "/v1/translate", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise SystemExit(f"bench_stream.py: status {resp.status}: {resp.read()!r}")
    first, text, event = None, "", None
    while True:
        line = resp.readline().decode()
        if not line:
            raise SystemExit("bench_stream.py: the stream ended without a done event")
        line = line.rstrip("\n")
        if line.startswith("event: "):
            event = line[7:]
        elif line.startswith("data: "):
            data = line[6:]
            if event == "word":
                if first is None:
                    first = time.perf_counter() - start
                text += json.loads(data)["text"]
            elif event == "done":
                total = time.perf_counter() - start
                conn.close()
                return first, total, text, data
            else:
                raise SystemExit(f"bench_stream.py: event {event}: {data}")


def plain(port, body):
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    start = time.perf_counter()
    conn.request("POST", "/v1/translate", json.dumps(body), {"Content-Type": "application/json"})
    resp = conn.getresponse()
    data = resp.read().decode()
    total = time.perf_counter() - start
    conn.close()
    if resp.status != 200:
        raise SystemExit(f"bench_stream.py: status {resp.status}: {data}")
    return total, data


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main():
    port, path = int(sys.argv[1]), sys.argv[2]
    count = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    beams = [int(b) for b in sys.argv[4:]] or [1, 5]
    lines = [l.rstrip("\n") for l in open(path, encoding="utf-8") if l.strip()][:count]
    floor = {}
    for item in os.environ.get("FLOOR", "").split():
        beam, encoder, step = item.split(":")
        floor[int(beam)] = (float(encoder), float(step))
    print("| beam | sentences | first word ms (p50 / p90) | streamed total ms (p50 / p90) | not streamed ms (p50 / p90) "
          "| first word / not streamed (p50) | streamed / not streamed (p50 of the ratios) | no word before done "
          "| first word ms (mean) | encoder + one step ms (mean) | first word / (encoder + one step) |")
    print("|---:|---:|---|---|---|---:|---:|---:|---:|---:|---:|")
    for beam in beams:
        firsts, totals, plains, ratios, wordless = [], [], [], [], 0
        for i, line in enumerate(lines):
            body = {"text": [line], "beam_size": beam}
            runs = [lambda: plain(port, body), lambda: streamed(port, dict(body, stream=True))]
            if i % 2:
                runs.reverse()
            results = [r() for r in runs]
            if i % 2:
                results.reverse()
            (p_total, p_data), (first, s_total, text, s_data) = results
            if s_data != p_data:
                raise SystemExit(f"bench_stream.py: line {i + 1}: the streamed answer differs from the one not streamed")
            if text != json.loads(p_data)["translations"][0][0]["text"]:
                raise SystemExit(f"bench_stream.py: line {i + 1}: the words do not concatenate to the translation")
            if first is None:
                wordless += 1
                first = s_total
            firsts.append(first * 1000)
            totals.append(s_total * 1000)
            plains.append(p_total * 1000)
            ratios.append(s_total / p_total)
        med = statistics.median
        mean_first = statistics.mean(firsts)
        if beam in floor:
            least = sum(floor[beam])
            floor_cells = f"{mean_first:.1f} | {least:.1f} ({floor[beam][0]:.1f} + {floor[beam][1]:.2f}) | {mean_first / least:.2f}x"
        else:
            floor_cells = f"{mean_first:.1f} | – | –"
        print(f"| {beam} | {len(lines)} | {med(firsts):.1f} / {pct(firsts, 0.9):.1f} | {med(totals):.1f} / {pct(totals, 0.9):.1f} "
              f"| {med(plains):.1f} / {pct(plains, 0.9):.1f} | {med(firsts) / med(plains):.2f} | {med(ratios):.3f} | {wordless} "
              f"| {floor_cells} |")
    alternatives(port, lines)


def alternatives(port, lines):
    times, plains, words = [], [], []
    for line in lines:
        p_total, p_data = plain(port, {"text": [line]})
        text = json.loads(p_data)["translations"][0][0]["text"].split(" ")
        prefix = " ".join(text[: len(text) // 2])
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
        start = time.perf_counter()
        conn.request("POST", "/v1/alternatives", json.dumps({"text": line, "prefix": prefix, "k": 5}),
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        times.append((time.perf_counter() - start) * 1000)
        conn.close()
        if resp.status != 200:
            raise SystemExit(f"bench_stream.py: alternatives: status {resp.status}: {data!r}")
        plains.append(p_total * 1000)
        words.append(len(line.split()))
    med = statistics.median
    print()
    print("| POST /v1/alternatives, k 5, prefix: half the translation | sentences | source words (p50) | ms (p50 / p90) "
          "| the translation alone, ms (p50) |")
    print("|---|---:|---:|---|---:|")
    print(f"| served beam | {len(lines)} | {med(words):.0f} | {med(times):.1f} / {pct(times, 0.9):.1f} | {med(plains):.1f} |")


if __name__ == "__main__":
    main()
