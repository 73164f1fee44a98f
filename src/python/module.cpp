// The Python module `attnmt` (pybind11): a Translator over a trained model, decoding with the same
// search, batching and settings as `attnmt translate`, and sacreBLEU-equal corpus scores.
//   tr = attnmt.Translator("model.pt", threads=2, precision="bf16")
//   tr.translate(["Ein Hund läuft."], beam_size=5, n_best=2, return_attention=True)
//   attnmt.score(hyps, refs)
// Translation and scoring release the GIL. attnmt's errors become ValueError (bad input: a file,
// a setting, an argument) or RuntimeError; a model path that does not exist, FileNotFoundError.
#include <dlfcn.h>
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/loader.h"
#include "decoding/seq2seq_step_model.h"
#include "decoding/translator.h"
#include "eval/metrics.h"
#include "io/model_file.h"
#include "runtime/compute.h"
#include "util/error.h"
#include "util/logging.h"

namespace py = pybind11;
namespace fs = std::filesystem;

namespace attnmt {
namespace {

// The keys a call may change (config/key_table.cpp's table: scope `call`, every one a decode.* key),
// by their names under decode:, in the table's order.
const std::vector<std::string>& call_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const auto& key : keys_that_may_change(KeyScope::call)) {
      if (key.rfind("decode.", 0) != 0) throw std::logic_error("a per-call key outside decode.*: " + key);
      out.push_back(key.substr(7));
    }
    return out;
  }();
  return keys;
}

std::string call_key_list() {
  std::string list;
  for (const auto& key : call_keys()) list += (list.empty() ? "" : ", ") + key;
  return list;
}

// A Python value as the YAML scalar a --set takes ("true", "5", "0.6", text).
std::string setting_value(const py::handle& value, const std::string& key) {
  if (py::isinstance<py::bool_>(value)) return value.cast<bool>() ? "true" : "false";
  if (py::isinstance<py::int_>(value) || py::isinstance<py::float_>(value)) return py::str(value).cast<std::string>();
  if (py::isinstance<py::str>(value)) return value.cast<std::string>();
  throw py::type_error(key + ": expected a bool, number or string, got " +
                       py::str(py::type::of(value).attr("__name__")).cast<std::string>());
}

struct PyHypothesis {
  std::string text;
  double score = 0, log_prob = 0;
  std::vector<std::string> tokens, source_tokens;
  bool finished = true, constraints_met = true;
  py::object attention = py::none();

  std::string repr() const {
    return "Hypothesis(text=" + py::repr(py::str(text)).cast<std::string>() + ", score=" + py::repr(py::float_(score)).cast<std::string>() + ")";
  }
};

// [rows][cols] as a float32 NumPy array where NumPy is importable, else nested lists.
py::object attention_object(const std::vector<std::vector<float>>& weights) {
  static const bool have_numpy = [] {
    try {
      py::module_::import("numpy");
      return true;
    } catch (const py::error_already_set&) {
      return false;
    }
  }();
  if (!have_numpy) return py::cast(weights);
  const size_t rows = weights.size(), cols = rows ? weights.front().size() : 0;
  py::array_t<float> array({rows, cols});
  auto view = array.mutable_unchecked<2>();
  for (size_t r = 0; r < rows; ++r) {
    for (size_t c = 0; c < cols; ++c) view(r, c) = weights[r][c];
  }
  return std::move(array);
}

class PyTranslator {
 public:
  PyTranslator(const std::string& model, int threads, const std::optional<std::string>& precision,
             const std::optional<std::string>& device, const std::map<std::string, py::object>& settings,
             const std::string& checkpoint) {
    if (!fs::exists(model)) {
      PyErr_SetString(PyExc_FileNotFoundError, ("attnmt.Translator: no model at '" + model + "'").c_str());
      throw py::error_already_set();
    }
    std::vector<std::string> sets{"threads=" + std::to_string(threads)};
    if (precision) sets.push_back("decode.precision=" + *precision);
    for (const auto& [key, value] : settings) sets.push_back(key + "=" + setting_value(value, key));
    py::gil_scoped_release release;
    loaded_ = load_model(model, checkpoint, device.value_or(""), sets);
    configure_compute(loaded_.config.threads, loaded_.config.gemm);
    step_ = make_step_model(loaded_.model, loaded_.config.decode, loaded_.lexicon);
    defaults_ = translate_options(loaded_.config.decode);
  }

  py::list translate(const py::object& texts, bool return_attention, const py::object& prefixes,
                     const py::object& constraints, const py::kwargs& options) {
    const auto lines = string_list(texts, "texts");
    TranslateOptions call = options_for(options);
    call.search.return_attention = return_attention;
    call.return_pieces = true;
    LineGuides guides;
    if (!prefixes.is_none()) guides.prefixes = string_list(prefixes, "prefixes");
    if (!constraints.is_none()) {
      for (const auto& line : py::iter(constraints)) {
        guides.constraints.push_back(line.is_none() ? std::vector<std::string>{} : string_list(py::reinterpret_borrow<py::object>(line), "constraints[i]"));
      }
    }
    std::vector<std::vector<Translation>> results;
    {
      py::gil_scoped_release release;
      results = translate_lines(*step_, loaded_.tokenizers, lines, call, guides);
    }
    py::list out;
    for (auto& nbest : results) {
      py::list hyps;
      for (auto& t : nbest) {
        PyHypothesis h;
        h.text = std::move(t.text);
        h.score = t.score;
        h.log_prob = t.log_prob;
        h.tokens = std::move(t.tgt_pieces);
        h.source_tokens = std::move(t.src_pieces);
        h.finished = h.tokens.empty() || h.tokens.back() == "</s>";  // an empty line: nothing to cut
        h.constraints_met = t.constraints_met;
        if (return_attention) h.attention = attention_object(t.attention);
        hyps.append(py::cast(std::move(h)));
      }
      out.append(std::move(hyps));
    }
    return out;
  }

  std::string path() const { return loaded_.checkpoint; }
  py::dict decode_settings() const {
    py::dict d;
    const auto& s = defaults_.search;
    d["beam_size"] = s.beam_size;
    d["n_best"] = s.n_best;
    d["length_penalty"] = s.length_penalty;
    d["coverage_penalty"] = s.coverage_penalty;
    d["max_length_ratio"] = s.max_length_ratio;
    d["batch_size"] = defaults_.batch_size;
    d["precision"] = name_string(loaded_.config.decode.precision);
    d["device"] = loaded_.config.device;
    d["attention"] = loaded_.config.model.attention.type;
    return d;
  }

 private:
  static std::vector<std::string> string_list(const py::object& value, const std::string& name) {
    if (py::isinstance<py::str>(value) || py::isinstance<py::bytes>(value)) {
      throw py::type_error("translate(): " + name + " must be a list of strings, not a single string (wrap it in a list)");
    }
    std::vector<std::string> out;
    try {
      for (const auto& item : py::iter(value)) {
        if (!py::isinstance<py::str>(item)) {
          throw py::type_error("translate(): " + name + "[" + std::to_string(out.size()) + "] is a " +
                               py::str(py::type::of(item).attr("__name__")).cast<std::string>() + ", not a str");
        }
        out.push_back(item.cast<std::string>());
      }
    } catch (const py::error_already_set& e) {
      if (e.matches(PyExc_TypeError)) throw py::type_error("translate(): " + name + " must be a list of strings");
      throw;
    }
    return out;
  }

  // The call's decode options: the model's, with the call's keyword arguments applied through the
  // config loader (its validation and messages), remembered per distinct set of arguments.
  TranslateOptions options_for(const py::kwargs& options) {
    if (options.empty()) return defaults_;
    std::vector<std::string> sets;
    for (const auto& [k, v] : options) {
      const auto key = k.cast<std::string>();
      if (std::find(call_keys().begin(), call_keys().end(), key) == call_keys().end()) {
        throw py::type_error("translate() got an unexpected keyword argument '" + key + "' (decode options: " +
                             call_key_list() + "; return_attention, prefixes, constraints)");
      }
      if (v.is_none()) continue;
      sets.push_back("decode." + key + "=" + setting_value(v, key));
    }
    std::string signature;
    for (const auto& s : sets) signature += s + '\n';
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto found = cache_.find(signature);
    if (found != cache_.end()) return found->second;
    const Config config = parse_config(config_to_yaml(loaded_.config), "translate()", sets);
    auto call = translate_options(config.decode);
    return cache_.emplace(signature, call).first->second;
  }

  LoadedModel loaded_;
  std::unique_ptr<Seq2SeqStepModel> step_;
  TranslateOptions defaults_;
  std::mutex cache_mutex_;
  std::map<std::string, TranslateOptions> cache_;
};

py::dict score(const std::vector<std::string>& hyps, const std::vector<std::string>& refs) {
  BleuResult bleu;
  ChrfResult chrf;
  {
    py::gil_scoped_release release;
    bleu = corpus_bleu(hyps, refs);
    chrf = corpus_chrf(hyps, refs);
  }
  // The keys of `attnmt score --json`, plus its text lines.
  auto figures = bleu_json(bleu);
  figures["chrf"] = chrf.score;
  figures["signature"] = {{"bleu", bleu.signature()}, {"chrf", chrf.signature()}};
  py::dict d = py::module_::import("json").attr("loads")(figures.dump());
  d["lines"] = py::make_tuple(bleu.format(), chrf.format());
  return d;
}

// SentencePiece's module is loaded at run time; an installed package carries it beside this file.
void point_at_sentencepiece_module() {
  Dl_info info;
  if (std::getenv("ATTNMT_SPM_PLUGIN") || !::dladdr(reinterpret_cast<void*>(&point_at_sentencepiece_module), &info) ||
      !info.dli_fname) {
    return;
  }
  const auto beside = fs::path(info.dli_fname).parent_path() / "libattnmt_spm.so";
  if (fs::exists(beside)) ::setenv("ATTNMT_SPM_PLUGIN", beside.c_str(), 0);
}

}  // namespace
}  // namespace attnmt

PYBIND11_MODULE(_attnmt, m) {
  using namespace attnmt;
  m.doc() = "attnmt: RNN encoder-decoder translation with pluggable attention";
  m.attr("__version__") = ATTNMT_VERSION;
  static const std::string translate_doc =
      "Translates a list of sentences; returns one list of Hypothesis per sentence (n_best long). Keyword options "
      "override the model's decode settings for this call: " + call_key_list() +
      ". prefixes: a target prefix per sentence ('' = none); constraints: a list of target phrases per sentence. "
      "Releases the GIL.";
  point_at_sentencepiece_module();
  setup_logging(false);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      PyErr_SetString(PyExc_ValueError, e.what());
    } catch (const Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });

  py::class_<PyHypothesis>(m, "Hypothesis", "One translation of a sentence")
      .def_readonly("text", &PyHypothesis::text, "the detokenized translation")
      .def_readonly("score", &PyHypothesis::score, "the search's score: log P / length penalty (+ coverage penalty)")
      .def_readonly("log_prob", &PyHypothesis::log_prob, "log P(translation | source), end of sentence included")
      .def_readonly("tokens", &PyHypothesis::tokens, "target subwords ('</s>' last when finished)")
      .def_readonly("source_tokens", &PyHypothesis::source_tokens, "source subwords, '</s>' last")
      .def_readonly("finished", &PyHypothesis::finished, "False when cut at the maximum length")
      .def_readonly("constraints_met", &PyHypothesis::constraints_met, "holds every constraint of its sentence")
      .def_readonly("attention", &PyHypothesis::attention,
                    "weights [len(tokens)][len(source_tokens)] (NumPy float32 array, or lists without NumPy); "
                    "None unless return_attention")
      .def("__repr__", &PyHypothesis::repr);

  py::class_<PyTranslator>(m, "Translator", "A trained model, ready to translate")
      .def(py::init<const std::string&, int, const std::optional<std::string>&, const std::optional<std::string>&,
                    const std::map<std::string, py::object>&, const std::string&>(),
           py::arg("model"), py::kw_only(), py::arg("threads") = 0, py::arg("precision") = py::none(),
           py::arg("device") = py::none(), py::arg("settings") = std::map<std::string, py::object>{},
           py::arg("checkpoint") = "",
           "model: a model file (.pt) or a save dir; threads: intra-op threads, process-wide (0 = all "
           "cores); precision: fp32 | bf16 | int8 | auto (default: the model's decode.precision); device: cpu | cuda | "
           "cuda:N; settings: {'decode.length_penalty': 1.0, ...}, the keys `attnmt translate --set` takes")
      .def("translate", &PyTranslator::translate, py::arg("texts"), py::kw_only(), py::arg("return_attention") = false,
           py::arg("prefixes") = py::none(), py::arg("constraints") = py::none(),
           translate_doc.c_str())
      .def_property_readonly("model_path", &PyTranslator::path, "the model file read")
      .def_property_readonly("settings", &PyTranslator::decode_settings, "the model's decode settings");

  m.def("score", &score, py::arg("hypotheses"), py::arg("references"),
        "Corpus BLEU and chrF2 of hypotheses against one reference each, equal to sacreBLEU 2.x's defaults, "
        "as `attnmt score --json` gives them: {'bleu', 'bleu_counts', 'bleu_totals', 'bleu_precisions', 'bp', "
        "'sys_len', 'ref_len', 'chrf', 'signature': {'bleu', 'chrf'}, 'lines': (BLEU line, chrF2 line)}. "
        "Releases the GIL.");
}
