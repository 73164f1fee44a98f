// Small models for the tests: the config sizes, and the model built in eval mode. Everything not
// given keeps ModelConfig's defaults, so a test states only what it depends on.
#pragma once
#include <torch/torch.h>

#include <cstdint>
#include <string>

#include "model/seq2seq.h"

namespace attnmt::test {

// embedding, encoder (per direction) and decoder hidden sizes; the rest as ModelConfig has it.
inline ModelConfig sized_config(int64_t embedding, int64_t encoder_hidden, int64_t decoder_hidden) {
  ModelConfig config;
  config.embedding_size = embedding;
  config.encoder.hidden_size = encoder_hidden;
  config.decoder.hidden_size = decoder_hidden;
  return config;
}

// The conditional style as Marian's s2s builds it: the concat score, the mean bridge, a transition
// cell, a deep output at the embedding size, each encoder direction a stack of its own.
inline void make_conditional(ModelConfig& config) {
  config.decoder.style = DecoderStyle::conditional;
  config.attention.type = "luong_concat";
  config.decoder.init = DecoderInit::mean_bridge;
  config.decoder.transitions = 1;
  config.decoder.combine_bias = true;
  config.decoder.combine_size = static_cast<int>(config.embedding_size);
  config.encoder.separate_directions = true;
}

// An RNN kind on both sides and a decoder style with its usual attention (Luong: luong_general;
// Bahdanau: bahdanau; conditional: make_conditional), tied embeddings: the grid the decoding
// kernels are tested over.
inline ModelConfig styled_config(int64_t embedding, int64_t encoder_hidden, int64_t decoder_hidden,
                                 RnnType rnn, DecoderStyle style) {
  auto config = sized_config(embedding, encoder_hidden, decoder_hidden);
  config.encoder.rnn = config.decoder.rnn = rnn;
  config.decoder.style = style;
  config.attention.type = style == DecoderStyle::luong ? "luong_general" : "bahdanau";
  if (style == DecoderStyle::conditional) make_conditional(config);
  config.tie_embeddings = true;
  return config;
}

// A small model of attention variant `attention` (decoder 12 = bidirectional encoder 2 x 6, so
// that dot scores fit), with the sizes every variant's keys need.
inline ModelConfig small_search_config(const std::string& attention) {
  ModelConfig config;
  config.embedding_size = 8;
  config.encoder.hidden_size = 6;
  config.decoder.hidden_size = 12;
  config.encoder.layers = config.decoder.layers = 1;
  config.decoder.style = attention == "bahdanau" ? DecoderStyle::bahdanau : DecoderStyle::luong;
  config.attention.type = attention;
  config.attention.window = 2;
  config.attention.heads = 2;
  config.attention.max_area = 2;
  config.attention.max_positions = 4;
  return config;
}

// The largest absolute difference between two tensors' elements.
inline double max_abs_diff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<double>(); }

// The model of `config` for these vocabulary sizes, in eval mode (the caller seeds the RNG first).
inline Seq2Seq eval_model(const ModelConfig& config, int64_t src_vocab, int64_t tgt_vocab) {
  VocabSizes vocab;
  vocab.src = src_vocab;
  vocab.tgt = tgt_vocab;
  Seq2Seq model(config, vocab);
  model->eval();
  return model;
}

}  // namespace attnmt::test
