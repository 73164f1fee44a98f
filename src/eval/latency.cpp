#include "eval/latency.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "util/error.h"

namespace attnmt {

namespace {

// AL's sum up to tau, the first step that has read the whole source, with |y| / |x| = gamma.
double lagging(const std::vector<double>& delays, double source_length, double gamma) {
  // (SimulEval returns g(1) at once when g(1) > |x|: the loop gives the same, tau being 1.)
  double sum = 0;
  size_t tau = 0;
  for (size_t t = 0; t < delays.size(); ++t) {  // t = the paper's t - 1
    sum += delays[t] - static_cast<double>(t) / gamma;
    tau = t + 1;
    if (delays[t] >= source_length) break;
  }
  return sum / static_cast<double>(tau);
}

// Sum of v[0..end), end clamped to v's size (Python's sum(v[:end])).
double prefix_sum(const std::vector<double>& v, size_t end) {
  return std::accumulate(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(std::min(end, v.size())), 0.0);
}

}  // namespace

double average_lagging(const std::vector<double>& delays, double source_length, double target_length) {
  return lagging(delays, source_length, target_length / source_length);
}

double length_adaptive_average_lagging(const std::vector<double>& delays, double source_length,
                                       double reference_length) {
  const double longer = std::max(static_cast<double>(delays.size()), reference_length);
  return lagging(delays, source_length, longer / source_length);
}

double average_proportion(const std::vector<double>& delays, double source_length, double target_length) {
  return std::accumulate(delays.begin(), delays.end(), 0.0) / (source_length * target_length);
}

double differentiable_average_lagging(const std::vector<double>& delays, double source_length) {
  const double gamma = static_cast<double>(delays.size()) / source_length;
  double sum = 0, previous = 0;
  for (size_t i = 0; i < delays.size(); ++i) {
    // g'_i = max(g_i, g'_{i-1} + 1/gamma): a token cannot be written sooner than 1/gamma after the last
    const double g = i == 0 ? delays[0] : std::max(delays[i], previous + 1 / gamma);
    sum += g - static_cast<double>(i) / gamma;
    previous = g;
  }
  return sum / static_cast<double>(delays.size());
}

double average_token_delay(const std::vector<double>& delays, AtdSource source) {
  // A text source: a token lasts 1, and so does a target token. A log's source (SimulEval's speech
  // branch): a token lasts up to 300, a text target token 0.
  const bool text = source == AtdSource::text;
  const double source_token_length = text ? 1 : 300;
  const double target_token_length = text ? 1 : 0;
  // Target chunks: runs of equal delays (written at one time). Index 0 is a dummy, as SimulEval's.
  std::vector<double> target_chunk_sizes{0};
  std::vector<size_t> target_chunk{0};
  for (size_t i = 0; i < delays.size(); ++i) {
    if (i == 0 || delays[i] != delays[i - 1]) {
      target_chunk_sizes.push_back(1);
    } else {
      target_chunk_sizes.back() += 1;
    }
    target_chunk.push_back(target_chunk_sizes.size() - 1);
  }
  // Source chunks: what was read between two distinct delays, split in tokens of at most 300.
  std::vector<double> distinct;
  for (double d : delays) {
    if (std::find(distinct.begin(), distinct.end(), d) == distinct.end()) distinct.push_back(d);
  }
  std::vector<double> source_chunk_sizes{0};
  std::vector<double> source_time{0};  // end time of each source token
  for (size_t i = 0; i < distinct.size(); ++i) {
    const double duration = distinct[i] - (i == 0 ? 0 : distinct[i - 1]);
    std::vector<double> lengths;
    if (text) {
      lengths.assign(static_cast<size_t>(std::max(duration, 0.0)), source_token_length);
    } else {
      const double whole = std::floor(duration / source_token_length);  // Python's divmod
      const double rest = duration - whole * source_token_length;
      lengths.assign(static_cast<size_t>(std::max(whole, 0.0)), source_token_length);
      if (rest != 0) lengths.push_back(rest);
    }
    source_chunk_sizes.push_back(static_cast<double>(lengths.size()));
    for (double length : lengths) source_time.push_back(source_time.back() + length);
  }
  std::vector<double> target_time{0};
  for (double d : delays) target_time.push_back(std::max(d, target_time.back()) + target_token_length);

  double sum = 0;
  for (size_t t = 1; t < target_chunk.size(); ++t) {
    const size_t chunk = target_chunk[t];
    const double read_before = prefix_sum(source_chunk_sizes, chunk);
    const double written_before = prefix_sum(target_chunk_sizes, chunk);
    // The source token target token t answers: t, less what was written ahead of the source.
    const double s = static_cast<double>(t) - std::max(0.0, written_before - read_before);
    const double read_now = prefix_sum(source_chunk_sizes, chunk + 1);
    const auto source_token = static_cast<size_t>(s < read_now ? s : read_now);
    if (source_token >= source_time.size()) throw RuntimeError("average_token_delay: inconsistent delays");
    sum += target_time[t] - source_time[source_token];
  }
  return sum / static_cast<double>(delays.size());
}

LatencyScores instance_latency(const LatencyInstance& x) {
  if (x.delays.empty() || !(x.source_length > 0)) {
    throw RuntimeError("instance_latency: an instance needs delays and a source length > 0");
  }
  const double hypothesis = static_cast<double>(x.delays.size());
  const double target = x.reference_length < 0 ? hypothesis : x.reference_length;
  LatencyScores s;
  s.al = average_lagging(x.delays, x.source_length, target);
  s.al_stacl = average_lagging(x.delays, x.source_length, hypothesis);
  s.laal = length_adaptive_average_lagging(x.delays, x.source_length, target);
  s.ap = average_proportion(x.delays, x.source_length, target);
  s.dal = differentiable_average_lagging(x.delays, x.source_length);
  s.atd = average_token_delay(x.delays, AtdSource::log);
  s.atd_text = average_token_delay(x.delays, AtdSource::text);
  return s;
}

CorpusLatency corpus_latency(const std::vector<LatencyInstance>& instances) {
  CorpusLatency c;
  for (const auto& x : instances) {
    if (x.delays.empty()) continue;  // SimulEval: "has no delay information. Skipped"
    const auto s = instance_latency(x);
    c.mean.al += s.al;
    c.mean.al_stacl += s.al_stacl;
    c.mean.laal += s.laal;
    c.mean.ap += s.ap;
    c.mean.dal += s.dal;
    c.mean.atd += s.atd;
    c.mean.atd_text += s.atd_text;
    ++c.scored;
  }
  if (c.scored > 0) {
    const auto n = static_cast<double>(c.scored);
    for (double* v : {&c.mean.al, &c.mean.al_stacl, &c.mean.laal, &c.mean.ap, &c.mean.dal, &c.mean.atd, &c.mean.atd_text}) *v /= n;
  }
  return c;
}

std::vector<std::pair<std::string, double>> latency_fields(const LatencyScores& s) {
  return {{"AL", s.al}, {"AL_STACL", s.al_stacl}, {"LAAL", s.laal}, {"AP", s.ap}, {"DAL", s.dal}, {"ATD", s.atd}, {"ATD_text", s.atd_text}};
}

}  // namespace attnmt
