"""The Python module against the program: a tiny model trained by `attnmt train`, then the module's
translations, n-best lists, scores and attention compared with `attnmt translate`'s, its errors,
the GIL released while it translates, score() against sacreBLEU 2.6.0's values, and
a wheel from `pip wheel ./python` (offline) installed into a fresh virtual environment. Runs under unittest (or pytest); CTest
runs `python3 test_attnmt.py <class>` once per TestCase class (tests/CMakeLists.txt), and a run that
failed nothing but skipped something exits 77, which CTest reports as Skipped. Under CI=true a
skip is a failure.

Environment (set by CTest): PYTHONPATH=build/python, ATTNMT_BINARY, ATTNMT_TEST_DATA_DIR,
ATTNMT_SOURCE_DIR, ATTNMT_BUILD_DIR.
"""
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from pathlib import Path

import attnmt

BINARY = os.environ["ATTNMT_BINARY"]
DATA = Path(os.environ["ATTNMT_TEST_DATA_DIR"])
SOURCE = Path(os.environ["ATTNMT_SOURCE_DIR"])
LINES = (DATA / "tiny.de").read_text(encoding="utf-8").splitlines()

try:
    import numpy
except ImportError:
    numpy = None


def run(*args, **kw):
    result = subprocess.run([BINARY, *args], capture_output=True, text=True, **kw)
    if result.returncode != 0:
        raise AssertionError(f"attnmt {' '.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result.stdout


def skip_missing(test, why):
    """A test that cannot run for a missing dependency: a skip here, a failure under CI=true."""
    if os.environ.get("CI") == "true":
        test.fail(f"{why} (CI=true: a test that cannot run fails)")
    test.skipTest(why)


def as_lists(attention):
    return attention.tolist() if numpy is not None and isinstance(attention, numpy.ndarray) else attention


class Model:
    """A tiny model, trained once for the whole file (the config of tests/core/program.h's tiny_config)."""
    dir = None

    @classmethod
    def get(cls):
        if cls.dir is None:
            cls.dir = Path(tempfile.mkdtemp(prefix="attnmt_python_"))
            config = f"""data:
  train: {{src: {DATA}/tiny.de, tgt: {DATA}/tiny.en}}
  valid: {{src: {DATA}/tiny.de, tgt: {DATA}/tiny.en}}
tokenizer: {{vocab_size: 400, shared: true}}
model:
  embedding_size: 64
  encoder: {{hidden_size: 64, layers: 1, dropout: 0.0}}
  decoder: {{hidden_size: 64, layers: 1, dropout: 0.0}}
  attention: {{type: luong_general}}
train: {{save_dir: {cls.dir / 'model'}, batch_size: 10, max_steps: 80, learning_rate: 0.01,
        label_smoothing: 0.0, valid_every: 300, report_every: 50}}
decode: {{beam_size: 3}}
threads: 1
"""
            (cls.dir / "t.yaml").write_text(config)
            run("train", str(cls.dir / "t.yaml"))
        return cls.dir / "model"


def tearDownModule():
    if Model.dir is not None:
        shutil.rmtree(Model.dir, ignore_errors=True)


class TranslatorTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.model = Model.get()
        cls.tr = attnmt.Translator(str(cls.model), threads=1)
        cls.tmp = Path(tempfile.mkdtemp(prefix="attnmt_python_t_"))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def cli(self, *flags):
        return run("translate", "--model", str(self.model), "--input", str(DATA / "tiny.de"), "--threads", "1",
                   *flags).splitlines()

    def test_translations_equal_the_programs(self):
        results = self.tr.translate(LINES, beam_size=3)
        self.assertEqual(len(results), len(LINES))
        self.assertTrue(all(len(r) == 1 for r in results))
        self.assertEqual([r[0].text for r in results], self.cli("--beam-size", "3"))
        # greedy, and another length penalty, each as the program decodes with them
        self.assertEqual([r[0].text for r in self.tr.translate(LINES, beam_size=1)], self.cli("--beam-size", "1"))
        self.assertEqual([r[0].text for r in self.tr.translate(LINES, beam_size=4, length_penalty=1.0)],
                         self.cli("--beam-size", "4", "--set", "decode.length_penalty=1.0"))
        # the model's own decode settings when no option is given (beam 3 in its config)
        self.assertEqual([r[0].text for r in self.tr.translate(LINES)], self.cli())
        self.assertEqual(self.tr.settings["beam_size"], 3)
        # minimum Bayes risk over the beam, as the program reorders it
        self.assertEqual([r[0].text for r in self.tr.translate(LINES, beam_size=4, mbr="bleu")],
                         self.cli("--beam-size", "4", "--mbr", "bleu"))

    def test_n_best_texts_and_scores_equal_the_programs(self):
        scores_file = self.tmp / "scores.tsv"
        nbest = self.cli("--beam-size", "4", "--n-best", "3", "--scores", str(scores_file))
        scores = [line.split("\t") for line in scores_file.read_text().splitlines()]
        results = self.tr.translate(LINES, beam_size=4, n_best=3)
        got = []
        for i, hyps in enumerate(results):
            self.assertEqual(len(hyps), 3)
            self.assertEqual([h.score for h in hyps], sorted((h.score for h in hyps), reverse=True))
            for h in hyps:
                got.append((i, h))
        self.assertEqual(len(got), len(nbest))
        for (i, h), line, (index, log_prob, score) in zip(got, nbest, scores):
            number, text, _ = line.split(" ||| ")
            self.assertEqual((int(number), text), (i, h.text))
            self.assertEqual(int(index), i)
            self.assertAlmostEqual(h.log_prob, float(log_prob), places=4)
            self.assertAlmostEqual(h.score, float(score), places=4)
            self.assertLessEqual(h.log_prob, 0.0)
            self.assertEqual(h.finished, not h.tokens or h.tokens[-1] == "</s>")

    def test_attention_equals_the_programs(self):
        out = self.tmp / "attention.jsonl"
        self.cli("--beam-size", "3", "--attention-out", str(out))
        want = [json.loads(line) for line in out.read_text().splitlines()]
        results = self.tr.translate(LINES, beam_size=3, return_attention=True)
        for w, hyps in zip(want, results):
            h = hyps[0]
            weights = as_lists(h.attention)
            self.assertEqual(h.source_tokens, w["src"])
            self.assertEqual(h.tokens, w["tgt"])
            self.assertEqual(len(weights), len(h.tokens))
            for row, want_row in zip(weights, w["attention"]):
                self.assertEqual(len(row), len(h.source_tokens))
                self.assertAlmostEqual(sum(row), 1.0, places=4)
                for a, b in zip(row, want_row):
                    self.assertAlmostEqual(a, b, places=4)
        self.assertIsNone(self.tr.translate(LINES[:1])[0][0].attention)

    def test_prefixes_and_empty_lines(self):
        prefix = self.tr.translate(LINES[:1], beam_size=3)[0][0].text.split(" ")[0] + " A"
        hyp = self.tr.translate(LINES[:2], beam_size=3, prefixes=[prefix, ""])
        self.assertTrue(hyp[0][0].text.startswith(prefix), hyp[0][0].text)
        self.assertEqual(self.tr.translate([]), [])
        self.assertEqual(self.tr.translate(["", LINES[0]])[0][0].text, "")

    def test_bf16_equals_the_programs(self):
        tr = attnmt.Translator(str(self.model), threads=1, precision="bf16")
        self.assertEqual(tr.settings["precision"], "bf16")
        self.assertEqual([r[0].text for r in tr.translate(LINES)], self.cli("--precision", "bf16"))

    def test_int8_equals_the_programs(self):
        tr = attnmt.Translator(str(self.model), threads=1, precision="int8")
        self.assertEqual(tr.settings["precision"], "int8")
        self.assertEqual([r[0].text for r in tr.translate(LINES)], self.cli("--precision", "int8"))

    def test_bad_input_is_a_python_error_naming_it(self):
        with self.assertRaises(FileNotFoundError):
            attnmt.Translator(str(self.tmp / "no_such_model.pt"))
        with self.assertRaisesRegex(ValueError, "decode.precision"):
            attnmt.Translator(str(self.model), precision="fp64")
        with self.assertRaisesRegex(ValueError, "model.encoder.layers"):
            attnmt.Translator(str(self.model), settings={"model.encoder.layers": 3})
        with self.assertRaisesRegex(ValueError, "decode.beam_size"):
            self.tr.translate(LINES[:1], beam_size=0)
        with self.assertRaisesRegex(ValueError, "decode.top_p"):
            self.tr.translate(LINES[:1], sampling=True, top_p=1.5)
        with self.assertRaisesRegex(ValueError, "decode.mbr_candidates"):
            self.tr.translate(LINES[:1], mbr="chrf", mbr_candidates=4)  # more than the beam of 3
        with self.assertRaisesRegex(TypeError, "beam_sise"):
            self.tr.translate(LINES[:1], beam_sise=2)
        with self.assertRaisesRegex(TypeError, "list of strings"):
            self.tr.translate(LINES[0])
        with self.assertRaisesRegex(TypeError, r"texts\[1\]"):
            self.tr.translate([LINES[0], 5])
        with self.assertRaisesRegex(ValueError, "prefix"):
            self.tr.translate(LINES[:2], prefixes=["A"])
        with self.assertRaisesRegex(ValueError, "1 hypotheses|sizes|lines"):
            attnmt.score(["a"], ["a", "b"])
        # the translator still works after every error
        self.assertEqual(len(self.tr.translate(LINES[:2])), 2)

    def test_translating_releases_the_gil(self):
        many = LINES * 6
        done = threading.Event()
        elapsed = []

        def work():
            start = time.monotonic()
            self.tr.translate(many, beam_size=5)
            elapsed.append(time.monotonic() - start)
            done.set()

        thread = threading.Thread(target=work)
        last = time.monotonic()
        longest_gap = 0.0
        ticks = 0
        thread.start()
        while not done.is_set():
            now = time.monotonic()
            longest_gap = max(longest_gap, now - last)
            last = now
            ticks += 1
        thread.join()
        # Holding the GIL would stop this loop for the whole translation.
        self.assertGreater(elapsed[0], 0.05)
        self.assertLess(longest_gap, 0.5 * elapsed[0], f"{ticks} ticks, longest gap {longest_gap:.3f} s")

    def test_threads_share_a_translator(self):
        want = [r[0].text for r in self.tr.translate(LINES, beam_size=2)]
        results = [None] * 4

        def work(i):
            results[i] = [r[0].text for r in self.tr.translate(LINES, beam_size=2)]

        threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(results, [want] * 4)


class NumpyAttentionTest(unittest.TestCase):
    """With NumPy installed, attention comes as a float32 array (on a converted model: no training)."""

    def test_attention_is_a_float32_array_of_the_programs_weights(self):
        if numpy is None:
            skip_missing(self, "no NumPy (Debian: python3-numpy): attention as an array not checked")
        fixture = DATA / "convert" / "onmt_brnn_lstm_general"
        settings = json.loads((fixture / "settings.json").read_text(encoding="utf-8"))
        lines = (fixture / "src.txt").read_text(encoding="utf-8").splitlines()[:5]
        with tempfile.TemporaryDirectory(prefix="attnmt_python_numpy_") as tmp:
            model, src, out = Path(tmp) / "converted.pt", Path(tmp) / "src.txt", Path(tmp) / "attention.jsonl"
            run("convert", "--from", "opennmt-py", str(fixture / settings["checkpoint"]), "--output", str(model))
            src.write_text("\n".join(lines) + "\n", encoding="utf-8")
            run("translate", "--model", str(model), "--input", str(src), "--threads", "1", "--attention-out", str(out))
            want = [json.loads(line) for line in out.read_text().splitlines()]
            results = attnmt.Translator(str(model), threads=1).translate(lines, return_attention=True)
        self.assertEqual(len(results), len(want))
        for hyps, w in zip(results, want):
            a = hyps[0].attention
            self.assertIsInstance(a, numpy.ndarray)
            self.assertEqual(a.dtype, numpy.float32)
            self.assertEqual(a.shape, (len(w["tgt"]), len(w["src"])))
            self.assertTrue(numpy.allclose(a, numpy.array(w["attention"], dtype=numpy.float32), atol=1e-5))


class ConvertedModelTest(unittest.TestCase):
    """A model converted from OpenNMT-py (tests/data/convert/) in the module: what `attnmt translate` writes."""

    def test_converted_model_translates_as_the_program(self):
        fixture = DATA / "convert" / "onmt_brnn_lstm_general"
        settings = json.loads((fixture / "settings.json").read_text(encoding="utf-8"))
        tmp = Path(tempfile.mkdtemp(prefix="attnmt_python_convert_"))
        try:
            model = tmp / "converted.pt"
            run("convert", "--from", "opennmt-py", str(fixture / settings["checkpoint"]), "--output", str(model))
            lines = (fixture / "src.txt").read_text(encoding="utf-8").splitlines()[:10]
            want = run("translate", "--model", str(model), "--threads", "1", input="\n".join(lines) + "\n").splitlines()
            tr = attnmt.Translator(str(model), threads=1)
            self.assertEqual([r[0].text for r in tr.translate(lines)], want)
            expected = [json.loads(l) for l in (fixture / "expected.jsonl").read_text(encoding="utf-8").splitlines()[:10]]
            greedy = tr.translate(lines, beam_size=1)
            self.assertEqual([r[0].text for r in greedy], [" ".join(e["greedy"]["tokens"]) for e in expected])
            for r, e in zip(greedy, expected):
                self.assertAlmostEqual(r[0].score, e["greedy"]["score"], delta=1e-4)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


    def test_converted_fairseq_model_translates_as_fairseq_generate(self):
        """fairseq's beam-5 best (its rules, stored by convert) from the module, as from the program."""
        fixture = DATA / "convert" / "fairseq_wiseman"
        tmp = Path(tempfile.mkdtemp(prefix="attnmt_python_convert_fairseq_"))
        try:
            model = tmp / "converted.pt"
            run("convert", "--from", "fairseq", str(fixture / "checkpoint.pt"), "--data-dir", str(fixture),
                "--output", str(model))
            lines = (fixture / "src.txt").read_text(encoding="utf-8").splitlines()[:10]
            expected = [json.loads(l) for l in (fixture / "expected.jsonl").read_text(encoding="utf-8").splitlines()[:10]]
            tr = attnmt.Translator(str(model), threads=1)
            results = tr.translate(lines)
            self.assertEqual([r[0].text for r in results], [" ".join(e["beam5"][0]["tokens"]) for e in expected])
            for r, e in zip(results, expected):
                self.assertAlmostEqual(r[0].score, e["beam5"][0]["score"], delta=1e-4)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def test_converted_marian_model_translates_as_marian_decoder(self):
        """marian-decoder's beam-5 5-best (its rules, stored by convert) from the module: texts, and
        scores within Marian's 6 printed digits."""
        fixture = DATA / "convert" / "marian_s2s"
        tmp = Path(tempfile.mkdtemp(prefix="attnmt_python_convert_marian_"))
        try:
            model = tmp / "converted.pt"
            run("convert", "--from", "marian", str(fixture / "model.npz"), "--vocabs", str(fixture / "vocab.de.yml"),
                str(fixture / "vocab.en.yml"), "--output", str(model))
            lines = (fixture / "src.txt").read_text(encoding="utf-8").splitlines()[:10]
            expected = [json.loads(l) for l in (fixture / "expected.jsonl").read_text(encoding="utf-8").splitlines()[:10]]
            tr = attnmt.Translator(str(model), threads=1)
            results = tr.translate(lines, beam_size=5, n_best=5)
            for r, e in zip(results, expected):
                self.assertEqual([h.text for h in r], [" ".join(w["tokens"]) for w in e["beam5"]])
                for h, w in zip(r, e["beam5"]):
                    self.assertAlmostEqual(h.score, w["score"], delta=1e-4 + 5e-6 * abs(w["score"]))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class ScoreTest(unittest.TestCase):
    def test_score_equals_sacrebleu(self):
        expected = json.loads((DATA / "sacrebleu" / "expected.json").read_text())
        for case in expected["cases"]:
            hyps = (DATA / "sacrebleu" / f"{case['case']}.hyp").read_text(encoding="utf-8").split("\n")[:-1]
            refs = (DATA / "sacrebleu" / f"{case['case']}.ref").read_text(encoding="utf-8").split("\n")[:-1]
            s = attnmt.score(hyps, refs)
            self.assertAlmostEqual(s["bleu"], case["bleu"], places=4, msg=case["case"])
            self.assertAlmostEqual(s["chrf"], case["chrf"], places=4, msg=case["case"])
            self.assertEqual(s["sys_len"], case["sys_len"])
            self.assertEqual(s["ref_len"], case["ref_len"])
            self.assertEqual(s["bleu_counts"], case["counts"])
            self.assertEqual(s["bleu_totals"], case["totals"])
            self.assertTrue(math.isclose(s["bp"], case["bp"], abs_tol=1e-4))
        self.assertTrue(s["lines"][0].startswith("BLEU = "))
        self.assertTrue(s["lines"][1].startswith("chrF2 = "))
        self.assertIn("tok:13a", s["signature"]["bleu"])
        # the keys and values of `attnmt score --json`
        hyp, ref = DATA / "sacrebleu" / "light_noise.hyp", DATA / "sacrebleu" / "light_noise.ref"
        cli = json.loads(run("score", "--ref", str(ref), "--hyp", str(hyp), "--json"))
        mine = attnmt.score(hyp.read_text(encoding="utf-8").split("\n")[:-1],
                            ref.read_text(encoding="utf-8").split("\n")[:-1])
        for key, value in cli.items():
            self.assertEqual(mine[key], value, key)


class InstallTest(unittest.TestCase):
    def test_pip_wheel_offline_then_a_fresh_venv_translates_as_the_program(self):
        if sys.prefix != sys.base_prefix:
            skip_missing(self, "running inside a virtual environment: run with the system's python3")
        with tempfile.TemporaryDirectory(prefix="attnmt_wheel_") as tmp:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
            # No index at all: the wheel is built from this build's module (python/build_backend).
            env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1")
            venv = Path(tmp) / "v"
            made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
            if made.returncode != 0:
                skip_missing(self, f"no venv for {sys.executable} (Debian: python3-venv): {made.stderr.strip()}")
            # `pip wheel` (the fresh venv's pip) builds the wheel and installs nothing.
            wheels = Path(tmp) / "wheels"
            built = subprocess.run([str(venv / "bin" / "pip"), "wheel", "--no-deps", "-w", str(wheels),
                                    str(SOURCE / "python")], capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(built.returncode, 0, built.stdout + built.stderr)
            found = sorted(wheels.glob("attnmt-*.whl"))
            self.assertEqual(len(found), 1, built.stdout)
            program_version = run("--version").split()[1]
            self.assertTrue(found[0].name.startswith(f"attnmt-{program_version}-cp3"), found[0].name)
            pip = subprocess.run([str(venv / "bin" / "pip"), "install", str(found[0])], capture_output=True,
                                 text=True, env=env, cwd=tmp)
            self.assertEqual(pip.returncode, 0, pip.stdout + pip.stderr)
            model = Model.get()
            script = ("import sys, attnmt; tr = attnmt.Translator(sys.argv[1], threads=1); "
                      "r = tr.translate(sys.argv[2:], return_attention=True); "
                      "print(attnmt.__version__); print(attnmt.__file__); print(type(r[0][0].attention).__name__); "
                      "print('\\n'.join(h[0].text for h in r))")
            out = subprocess.run([str(venv / "bin" / "python"), "-c", script, str(model), *LINES],
                                 capture_output=True, text=True, env=env, cwd=tmp)
            self.assertEqual(out.returncode, 0, out.stderr)
            lines = out.stdout.splitlines()
            self.assertEqual(lines[0], program_version)
            self.assertTrue(lines[1].startswith(str(venv)), lines[1])
            self.assertIn(lines[2], ("list", "ndarray"))
            cli = run("translate", "--model", str(model), "--input", str(DATA / "tiny.de"), "--threads", "1")
            self.assertEqual(lines[3:], cli.splitlines())


if __name__ == "__main__":
    result = unittest.main(verbosity=2, exit=False).result
    for case, why in result.skipped:
        print(f"SKIPPED: {case.id()}: {why}")
    sys.exit(1 if not result.wasSuccessful() else 77 if result.skipped else 0)
