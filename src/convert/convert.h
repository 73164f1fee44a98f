// attnmt convert: models trained by OpenNMT-py (2.x and 3.x checkpoints), Joey NMT (2.x),
// fairseq (its lstm architectures) and Marian (its s2s type) as
// ordinary attnmt model files (docs/convert.md). Each reader (opennmt.cpp, joeynmt.cpp, fairseq.cpp, marian.cpp) maps the
// toolkit's options and weights onto attnmt's model family (model.decoder.init, combine_bias,
// combine_tanh, source_eos and encoder.embedding_size cover what differs) and its decoding
// defaults onto decode.* (decode.search_rules: the toolkit's own beam and greedy rules); the
// writer (write_converted_model) puts the toolkit's special tokens at attnmt's ids 0..3, stores
// its vocabularies (with the SentencePiece models, when given) as the tokenizers, checks every
// weight against the model attnmt builds from that config, and writes the file.
// Anything attnmt cannot compute (copy attention, sparsemax, context gates, SRU, Transformers,
// CNNs, ...) is refused with one line that says so: an InputError naming the file.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace attnmt {

struct ConvertOptions {
  std::string from;        // opennmt-py | joeynmt | fairseq | marian
  std::string source;      // OpenNMT-py: the .pt (or .safetensors); Joey NMT: the model dir or its config.yaml
  std::string checkpoint;  // Joey NMT: the checkpoint file to take ("" = best.ckpt, else the newest)
  std::string data_dir;    // fairseq: the directory of its dict.SRC.txt / dict.TGT.txt
  std::vector<std::string> vocabs;  // Marian: its source and target vocabularies (.yml)
  std::string output;      // the attnmt model file to write
  std::string src_spm, tgt_spm;  // SentencePiece models ("" = the checkpoint's own, or pre-tokenized text)
  // The share of a vocabulary's tokens a SentencePiece model may lack before the pair is refused
  // as not belonging together (a few are normal: tokens of the training data's own segmentation).
  double max_unknown = 0.05;
};

// The special tokens' ids in a toolkit's vocabulary (-1: the vocabulary has none).
struct SpecialIds {
  int64_t pad = -1, unk = -1, bos = -1, eos = -1;
};

// A toolkit's model, read and mapped onto attnmt's names and options.
struct ToolkitModel {
  std::string toolkit;  // "OpenNMT-py 2.x", "Joey NMT 2.x": for messages and the log
  ModelConfig model;
  DecodeConfig decode;
  std::vector<std::string> src_tokens, tgt_tokens;  // the toolkit's vocabularies, in its id order
  SpecialIds src_specials, tgt_specials;
  // attnmt parameter name -> weight; vocabulary-sized dimensions in the toolkit's id order.
  std::map<std::string, torch::Tensor> weights;
  std::string src_spm, tgt_spm;  // SentencePiece model files ("" = pre-tokenized text)
};

// The readers. InputError (naming the file) for anything unreadable or unsupported.
ToolkitModel read_opennmt(const ConvertOptions& options);
ToolkitModel read_joeynmt(const ConvertOptions& options);
ToolkitModel read_fairseq(const ConvertOptions& options);
ToolkitModel read_marian(const ConvertOptions& options);

// Writes `model` as an attnmt model file at options.output (atomically: nothing is left behind
// when it fails). InputError when a SentencePiece model does not fit its vocabulary.
void write_converted_model(ToolkitModel model, const ConvertOptions& options);

// read_* then write_converted_model. Returns a one-line summary of what was converted.
std::string convert_model(const ConvertOptions& options);

}  // namespace attnmt
