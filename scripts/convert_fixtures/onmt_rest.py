#!/usr/bin/env python3
"""Record what OpenNMT-py's OWN REST server (onmt/bin/server.py + onmt/translate/
translation_server.py, run as its docs say: a conf.json naming the model) answers to
POST /translator/translate on an OpenNMT-py fixture, for tests/e2e/test_serve.cpp ("answers as
OpenNMT-py's server does"). One file per n_best:

    onmt_rest.py FIXDIR N_BEST...        e.g. onmt_rest.py tests/data/convert/onmt_brnn_lstm_general 1 3

writes FIXDIR/rest_nbest<N>.json = {"server", "conf", "exchanges": [{"request", "status",
"response"}, ...]}. conf.json has no tokenizer (the inputs are the fixture's pieces, src.txt, as
the model reads them) and two models of FIXDIR/model.pt: id 100 (beam_size 5, n_best N) and id 101
(the same with report_align). The requests: 8 lines at once (id 100); empty, whitespace-only and
whitespace-wrapped inputs (id 100); 2 lines to id 101 (alignments asked of an RNN model).

PYTHONPATH: OpenNMT-py (2.3.0) + torchtext 0.5.0 ($ONMT_PYTHONPATH of ../shared/peers); Debian's
python3-flask and python3-waitress. 1 thread (OMP_NUM_THREADS=1) as the other fixtures.
"""
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(port, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}/translator/translate",
                                 data=json.dumps(body).encode("utf-8"),
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=300) as r:
            return r.status, json.loads(r.read().decode("utf-8"))
    except urllib.error.HTTPError as e:  # kept as text: Flask's 500 page is HTML
        return e.code, e.read().decode("utf-8")


def record(fixdir, n_best, lines):
    import onmt
    conf = {"models_root": ".", "models": [
        {"id": 100, "model": "model.pt", "timeout": -1, "load": True,
         "opt": {"beam_size": 5, "n_best": n_best}},
        {"id": 101, "model": "model.pt", "timeout": -1, "load": True,
         "opt": {"beam_size": 5, "n_best": n_best, "report_align": True}}]}
    requests = [
        [{"src": lines[i], "id": 100} for i in range(8)],
        [{"src": "", "id": 100}, {"src": "   ", "id": 100}, {"src": "\t" + lines[8] + "  ", "id": 100},
         {"src": lines[9], "id": 100}],
        [{"src": lines[i], "id": 101} for i in range(2)],
    ]
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        conf_path = Path(tmp) / "conf.json"
        conf_path.write_text(json.dumps(dict(conf, models_root=str(fixdir))))
        log = open(Path(tmp) / "server.log", "w")
        server = subprocess.Popen([sys.executable, str(Path(onmt.__file__).parent / "bin" / "server.py"),
                                   "--ip", "127.0.0.1", "--port", str(port), "--config", str(conf_path)],
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            for _ in range(600):
                if "Serving on" in (Path(tmp) / "server.log").read_text():
                    break
                if server.poll() is not None:
                    raise SystemExit("onmt_rest.py: the server ended:\n" + (Path(tmp) / "server.log").read_text())
                time.sleep(0.1)
            exchanges = []
            for body in requests:
                status, response = post(port, body)
                exchanges.append({"request": body, "status": status, "response": response})
        finally:
            server.terminate()
            server.wait()
    return {"server": f"OpenNMT-py {onmt.__version__}: onmt/bin/server.py --config conf.json "
                      "(conf below; models_root = this directory)",
            "conf": conf, "exchanges": exchanges}


def main():
    fixdir = Path(sys.argv[1]).resolve()
    lines = (fixdir / "src.txt").read_text(encoding="utf-8").split("\n")
    for n in sys.argv[2:]:
        out = record(fixdir, int(n), lines)
        path = fixdir / f"rest_nbest{n}.json"
        path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
        sys.stderr.write(f"onmt_rest.py: {path}: statuses {[e['status'] for e in out['exchanges']]}\n")


if __name__ == "__main__":
    main()
