#include "io/train_log.h"

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace attnmt {

namespace {

using nlohmann::json;

template <class T>
void optional_field(json& j, const char* key, const std::optional<T>& value) {
  if (value) j[key] = *value;
}

json to_json(const StartRecord& r) {
  return {{"type", "start"}, {"step", r.step}, {"parameters", r.parameters}, {"attention", r.attention},
          {"decoder_style", r.decoder_style}, {"threads", r.threads}, {"replicas", r.replicas}, {"blas", r.blas},
          {"malloc", r.malloc}, {"gemm", r.gemm}, {"precision", r.precision}, {"bf16_kernel", r.bf16_kernel},
          {"cpu_flags", r.cpu_flags}, {"device", r.device}, {"batches_per_epoch", r.batches_per_epoch},
          {"resumed", r.resumed}, {"processes", r.processes}, {"distributed_backend", r.distributed_backend}};
}

json to_json(const TrainRecord& r) {
  json j = {{"type", "train"}, {"step", r.step}, {"epoch", r.epoch}, {"loss", r.loss}, {"ppl", r.ppl},
            {"lr", r.lr}, {"tgt_tokens_per_sec", r.tgt_tokens_per_sec}, {"elapsed", r.elapsed}};
  optional_field(j, "allreduce_share", r.allreduce_share);
  return j;
}

json to_json(const ValidRecord& r) {
  json j = {{"type", "valid"}, {"step", r.step}, {"epoch", r.epoch}, {"valid_ppl", r.valid_ppl}, {"lr", r.lr},
            {"elapsed", r.elapsed}, {"best", r.best}, {"scheduled", r.scheduled}};
  optional_field(j, "valid_bleu", r.valid_bleu);
  optional_field(j, "valid_chrf", r.valid_chrf);
  return j;
}

json to_json(const TestRecord& r) {
  return {{"type", "test"}, {"step", r.step}, {"test_bleu", r.test_bleu}, {"test_chrf", r.test_chrf},
          {"beam_size", r.beam_size}, {"sentences", r.sentences}, {"decode_seconds", r.decode_seconds},
          {"checkpoint", r.checkpoint}};
}

template <class T>
std::optional<T> get_optional(const json& j, const char* key) {
  if (!j.contains(key) || j[key].is_null()) return std::nullopt;
  return j[key].get<T>();
}

// A record from a parsed line; nullopt for another type. json's type_error for a field of the
// wrong type, which the reader counts as a line that does not parse.
std::optional<TrainLogRecord> from_json(const json& j) {
  const auto type = j.value("type", "");
  if (type == "start") {
    StartRecord r;
    r.step = j.value("step", int64_t{0});
    r.parameters = j.value("parameters", int64_t{0});
    r.attention = j.value("attention", "");
    r.decoder_style = j.value("decoder_style", "");
    r.threads = j.value("threads", int64_t{0});
    r.replicas = j.value("replicas", int64_t{0});
    r.blas = j.value("blas", "");
    r.malloc = j.value("malloc", "");
    r.gemm = j.value("gemm", "");
    r.precision = j.value("precision", "");
    r.bf16_kernel = j.value("bf16_kernel", "");
    r.cpu_flags = j.value("cpu_flags", "");
    r.device = j.value("device", "");
    r.batches_per_epoch = j.value("batches_per_epoch", int64_t{0});
    r.resumed = j.value("resumed", false);
    r.processes = j.value("processes", int64_t{1});
    r.distributed_backend = j.value("distributed_backend", "");
    return r;
  }
  if (type == "train") {
    TrainRecord r;
    r.step = j.at("step").get<int64_t>();
    r.epoch = j.value("epoch", int64_t{0});
    r.loss = j.value("loss", 0.0);
    r.ppl = j.value("ppl", 0.0);
    r.lr = j.value("lr", 0.0);
    r.tgt_tokens_per_sec = j.at("tgt_tokens_per_sec").get<double>();
    r.elapsed = j.at("elapsed").get<double>();
    r.allreduce_share = get_optional<double>(j, "allreduce_share");
    return r;
  }
  if (type == "valid") {
    ValidRecord r;
    r.step = j.at("step").get<int64_t>();
    r.epoch = j.value("epoch", int64_t{0});
    r.valid_ppl = j.at("valid_ppl").get<double>();
    r.valid_bleu = get_optional<double>(j, "valid_bleu");
    r.valid_chrf = get_optional<double>(j, "valid_chrf");
    r.lr = j.value("lr", 0.0);
    r.elapsed = j.at("elapsed").get<double>();
    r.best = j.value("best", false);
    r.scheduled = j.value("scheduled", true);
    return r;
  }
  if (type == "test") {
    TestRecord r;
    r.step = j.at("step").get<int64_t>();
    r.test_bleu = j.at("test_bleu").get<double>();
    r.test_chrf = j.at("test_chrf").get<double>();
    r.beam_size = j.value("beam_size", int64_t{0});
    r.sentences = j.value("sentences", int64_t{0});
    r.decode_seconds = j.value("decode_seconds", 0.0);
    r.checkpoint = j.value("checkpoint", "");
    return r;
  }
  return std::nullopt;
}

}  // namespace

std::string train_log_line(const TrainLogRecord& record) {
  return std::visit([](const auto& r) { return to_json(r).dump(); }, record);
}

TrainLogWriter::TrainLogWriter(const std::string& path) : out_(path, std::ios::app) {
  if (!out_) throw InputError("train.save_dir: cannot write '" + path + "'");
}

void TrainLogWriter::write(const TrainLogRecord& record) {
  out_ << train_log_line(record) << '\n';
  out_.flush();
}

std::optional<TrainLog> read_train_log(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  TrainLog log;
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    const auto j = json::parse(line, nullptr, /*allow_exceptions=*/false);
    std::optional<TrainLogRecord> record;
    if (j.is_object()) {
      try {
        record = from_json(j);
      } catch (const json::exception&) {
        record.reset();
      }
    }
    if (record) {
      log.records.push_back(std::move(*record));
    } else {
      ++log.skipped_lines;
    }
  }
  return log;
}

}  // namespace attnmt
