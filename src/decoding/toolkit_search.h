// Beam and greedy search by the rules of two other toolkits, so that a model converted from one
// of them (docs/convert.md) translates as that toolkit translates it (decode.search_rules;
// docs/decoding.md#other-toolkits-search-rules). Each function follows its toolkit's Python code
// step by step, with the same tensor operations in float32 (log_softmax, the running sums, the
// length penalty, topk over [sentences, K * V]), so that the same values give the same choices,
// ties included:
//
// OpenNMT-py 2.3, onmt/translate/beam_search.py (BeamSearch; onmt_translate runs it for every
// beam size, beam 1 included, unless it samples):
//   - candidates: topk over K * V of (running log P + log_softmax) / lp, lp = ((5 + |Y| + 1) / 6)^alpha
//     (GNMT; |Y| counts the eos, the +1 is its bos) when alpha > 0, else 1; beams 1..K-1 start at -inf;
//   - eos and (ban_unk) unk get -1e20 while fewer than min_length tokens are out;
//   - a candidate ending in eos is a finished hypothesis (score = its candidate score); its slot's
//     running log P becomes -1e10, and the slot is still expanded;
//   - a sentence ends once its best candidate has once ended in eos and it has >= K finished
//     hypotheses, or at max_length tokens (then every slot is finished as it is); its n_best
//     best hypotheses, stably sorted by score, are returned.
// onmt/translate/greedy_search.py (GreedySearch with random_sampling_topk 1: argmax): the running
//   sum of the chosen log-probabilities, divided by lp(|Y| + 1) when the sentence ends.
//
// OpenNMT-py 3.x (v3.5.1, commit 3f0c5f7c), the same file (rules opennmt3), differs in:
//   - lp = (|Y| + 1)^alpha (its default length_penalty avg) when alpha > 0, else 1;
//   - barred tokens and finished slots get -65504 (the float16 minimum) instead of -1e20 / -1e10;
//   - a sentence ends once its CURRENT best candidate ends in eos and it has >= n_best finished
//     hypotheses (so n_best changes the 1-best);
//   - the most tokens are int(min(max_length, source length x max_length_ratio + 5)), where 3.x's
//     translator takes its batch's longest source and these rules each sentence's own (the same
//     at batch size 1).
//
// Joey NMT 2.3, joeynmt/search.py:
//   - beam_search: bos and pad get -inf, unk too with ban_unk (not generate_unk), eos while fewer
//     than min_length tokens are out; candidates: topk over K * V of (running log P + log_softmax)
//     / ((5 + |Y|) / 6)^alpha when alpha > 0; a slot is finished once a candidate in it ends in eos
//     or scores -inf, and stays finished whatever later candidates it holds (finished slots keep
//     their score and go on being expanded); a sentence ends when all its slots are finished, or
//     at max_length (0: Joey's default, int(1.5 x the source length, eos included), computed per
//     sentence where Joey takes its batch's longest source); the hypotheses collected are those
//     with exactly one eos, at their end (or, at max_length, none); fewer than n_best are filled
//     up with <unk> of score -1;
//   - recurrent_greedy (beam 1): argmax of the logits with the same tokens barred; Joey reports
//     each token's log-probability, here summed (score = log_prob).
//
// fairseq (SequenceGenerator + search.BeamSearch, facebookresearch/fairseq; fairseq-generate runs
// it for beam 1 too):
//   - pad gets -inf, unk loses unk_penalty (--unkpen), eos gets -inf before min_length (--min-len,
//     1 by default) and every other token from max_len = int(a x source tokens with </s> + b) on
//     (--max-len-a/-b: max_length_ratio, max_length); --no-repeat-ngram-size is refused: on a CPU
//     fairseq's NGramRepeatBlock (its Python fallback) compares the n-grams with the padding at
//     the end of its token buffer and bars nothing, so there is no one behaviour to follow;
//   - candidates: the top 2K of (running log P + log P) over K * V (step 0: the first beam only);
//   - an eos among the first K candidates (a finite score) is a finished hypothesis, scored
//     running log P / (length with eos)^length_penalty (--lenpen), while the sentence has fewer
//     than K; the sentence ends with K of them, or at max_len; the next beam is the first K
//     candidates that are not eos (a finished slot is replaced, never expanded);
//   - the hypotheses are sorted by score, the n_best first.
//
// Every hypothesis: tokens without bos and eos (cut at the first eos, as both toolkits' outputs
// are), score = the toolkit's, log_prob = log P of those tokens and the eos, finished = ended by
// eos, attention rows with options.return_attention. The maximum length is options.max_length
// alone (max_length_ratio is used by opennmt3 only). Not supported here (refused): sampling, a shortlist,
// coverage penalty, no_repeat_ngram_size, prefixes and constraints.
#pragma once
#include <vector>

#include "decoding/search_types.h"
#include "decoding/step_model.h"

namespace attnmt {

// options.rules chooses: opennmt, opennmt3 -> opennmt_beam_search; fairseq -> fairseq_search; marian -> marian_search;
// joeynmt -> beam_size >= 2 ?
// joeynmt_beam_search : joeynmt_greedy_search (as each toolkit's translator chooses).
// std::invalid_argument, one line naming the option, for what these rules do not support.
std::vector<std::vector<Hypothesis>> toolkit_search(StepModel& model, const torch::Tensor& src,
                                                    const torch::Tensor& lengths, const SearchOptions& options,
                                                    const Guides& guides = {});

std::vector<std::vector<Hypothesis>> opennmt_beam_search(StepModel& model, const torch::Tensor& src,
                                                         const torch::Tensor& lengths, const SearchOptions& options,
                                                         const Guides& guides = {});
std::vector<std::vector<Hypothesis>> opennmt_greedy_search(StepModel& model, const torch::Tensor& src,
                                                           const torch::Tensor& lengths, const SearchOptions& options,
                                                           const Guides& guides = {});
std::vector<std::vector<Hypothesis>> joeynmt_beam_search(StepModel& model, const torch::Tensor& src,
                                                         const torch::Tensor& lengths, const SearchOptions& options,
                                                         const Guides& guides = {});
std::vector<std::vector<Hypothesis>> fairseq_search(StepModel& model, const torch::Tensor& src,
                                                    const torch::Tensor& lengths, const SearchOptions& options,
                                                    const Guides& guides = {});
std::vector<std::vector<Hypothesis>> marian_search(StepModel& model, const torch::Tensor& src,
                                                   const torch::Tensor& lengths, const SearchOptions& options,
                                                   const Guides& guides = {});
std::vector<std::vector<Hypothesis>> joeynmt_greedy_search(StepModel& model, const torch::Tensor& src,
                                                           const torch::Tensor& lengths, const SearchOptions& options,
                                                           const Guides& guides = {});

}  // namespace attnmt
