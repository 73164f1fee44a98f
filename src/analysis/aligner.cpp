#include "analysis/aligner.h"

#include "decoding/seq2seq_step_model.h"

#include <algorithm>
#include <numeric>

#include "align/words.h"
#include "util/error.h"

namespace attnmt {
namespace {

// One side of a pair: its words, the model's ids, and which words each piece covers.
struct EncodedSide {
  std::vector<std::string> words;
  std::vector<int> ids;
  std::vector<std::vector<int>> piece_words;
};

EncodedSide encode_side(const Tokenizer& tokenizer, const std::string& line, bool detokenize) {
  EncodedSide side;
  side.words = split_words(line);
  if (side.words.empty()) return side;
  const auto text = join_words(side.words, detokenize);
  std::vector<std::pair<size_t, size_t>> spans;
  for (const auto& piece : tokenizer.encode_with_offsets(text.text)) {
    side.ids.push_back(piece.id);
    spans.emplace_back(piece.begin, piece.end);
  }
  side.piece_words = map_pieces(spans, text.spans);
  return side;
}

torch::Device model_device(const Seq2Seq& model) {
  for (const auto& p : model->parameters()) return p.device();
  return torch::kCPU;
}

}  // namespace

std::vector<SentenceAttention> forced_attention(LoadedModel& loaded, const std::vector<std::string>& src,
                                                const std::vector<std::string>& tgt, const AlignOptions& options) {
  if (src.size() != tgt.size()) {
    throw InputError("align: " + std::to_string(src.size()) + " source but " + std::to_string(tgt.size()) +
                     " target lines");
  }
  torch::InferenceMode inference;
  loaded.model->eval();
  const auto device = model_device(loaded.model);
  std::vector<EncodedSide> s(src.size()), t(src.size());
  std::vector<size_t> order;
  for (size_t i = 0; i < src.size(); ++i) {
    s[i] = encode_side(*loaded.tokenizers.src, src[i], options.detokenize);
    t[i] = encode_side(*loaded.tokenizers.tgt, tgt[i], options.detokenize);
    if (!s[i].ids.empty() && !t[i].ids.empty()) order.push_back(i);
  }
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return s[a].ids.size() > s[b].ids.size(); });

  std::vector<SentenceAttention> out(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    out[i].src_words = s[i].words;
    out[i].tgt_words = t[i].words;
  }
  const size_t batch = static_cast<size_t>(std::max(1, options.batch_size));
  for (size_t start = 0; start < order.size(); start += batch) {
    const size_t end = std::min(order.size(), start + batch);
    const int64_t B = static_cast<int64_t>(end - start);
    int64_t S = 0, T = 0;
    for (size_t k = start; k < end; ++k) {
      S = std::max<int64_t>(S, s[order[k]].ids.size() + 1);
      T = std::max<int64_t>(T, t[order[k]].ids.size() + 1);
    }
    auto src_ids = torch::full({B, S}, Tokenizer::kPad, torch::kLong);
    auto tgt_in = torch::full({B, T}, Tokenizer::kPad, torch::kLong);
    auto lengths = torch::empty({B}, torch::kLong);
    auto* sp = src_ids.data_ptr<int64_t>();
    auto* tp = tgt_in.data_ptr<int64_t>();
    for (int64_t b = 0; b < B; ++b) {
      const auto& si = s[order[start + b]].ids;
      const auto& ti = t[order[start + b]].ids;
      std::copy(si.begin(), si.end(), sp + b * S);
      sp[b * S + si.size()] = Tokenizer::kEos;
      lengths[b] = static_cast<int64_t>(si.size()) + 1;
      tp[b * T] = Tokenizer::kBos;
      std::copy(ti.begin(), ti.end(), tp + b * T + 1);
    }
    torch::Tensor attention;  // [B, T, S]
    loaded.model->forward(src_ids.to(device), lengths.to(device), tgt_in.to(device), &attention);
    attention = attention.to(torch::kCPU, torch::kFloat).contiguous();
    const auto* a = attention.data_ptr<float>();
    for (int64_t b = 0; b < B; ++b) {
      const size_t i = order[start + b];
      // row r is the step that predicts target piece r; the last (end-of-sentence) row and the
      // end-of-sentence column map to no word and are dropped by merge_attention
      std::vector<std::vector<float>> pieces(t[i].ids.size(), std::vector<float>(s[i].ids.size() + 1));
      for (size_t r = 0; r < pieces.size(); ++r) {
        std::copy(a + (b * T + r) * S, a + (b * T + r) * S + pieces[r].size(), pieces[r].begin());
      }
      out[i].words = merge_attention(pieces, t[i].piece_words, s[i].piece_words, t[i].words.size(), s[i].words.size());
    }
  }
  return out;
}

Links links_of(const SentenceAttention& sentence, const AlignOptions& options) {
  return links_from_attention(sentence.words, options.threshold);
}

std::vector<Links> align(LoadedModel& model, const std::vector<std::string>& src, const std::vector<std::string>& tgt,
                         const AlignOptions& options) {
  std::vector<Links> links;
  for (const auto& sentence : forced_attention(model, src, tgt, options)) links.push_back(links_of(sentence, options));
  return links;
}

std::vector<SentenceAttention> translate_with_attention(LoadedModel& loaded, const std::vector<std::string>& src,
                                                        TranslateOptions options) {
  loaded.model->eval();
  options.search.return_attention = true;
  options.search.n_best = 1;
  // The decoding `attnmt translate` runs with these settings (precision, packing, shortlist).
  auto step_model = make_step_model(loaded.model, loaded.config.decode, loaded.lexicon);
  const auto results = translate_lines(*step_model, loaded.tokenizers, src, options);
  std::vector<SentenceAttention> out(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    const auto& best = results[i].front();
    auto& o = out[i];
    o.translation = best.text;
    const auto source = encode_side(*loaded.tokenizers.src, src[i], /*detokenize=*/false);
    o.src_words = source.words;
    if (best.attention.empty()) continue;
    const auto target = words_from_pieces(best.tgt_pieces);
    o.tgt_words = target.words;
    // the translator encodes the line itself (same text, same ids); the offsets come from ours
    auto src_piece_words = source.piece_words;
    src_piece_words.resize(std::min(src_piece_words.size(), best.src_pieces.size()));
    o.words =
        merge_attention(best.attention, target.piece_to_words, src_piece_words, o.tgt_words.size(), o.src_words.size());
  }
  return out;
}

}  // namespace attnmt
