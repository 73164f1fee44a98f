#include "serve/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "util/error.h"
#include "util/logging.h"
#include "util/signals.h"

namespace attnmt {
namespace {

// Debian's libcpp-httplib.so listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when
// the library was compiled): 100+ clients connecting at once overflowed it, and the connections
// it dropped waited for TCP's SYN retries (p99 latency of 10 s at 128 clients). listen() again on
// the bound socket raises the backlog; the socket is the one listening on `port`.
void raise_listen_backlog(int port) {
  for (int fd = 3; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t size = sizeof(listening);
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &size) != 0 || !listening) continue;
    sockaddr_storage address{};
    socklen_t length = sizeof(address);
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) != 0) continue;
    int bound = -1;
    if (address.ss_family == AF_INET) bound = ntohs(reinterpret_cast<sockaddr_in*>(&address)->sin_port);
    if (address.ss_family == AF_INET6) bound = ntohs(reinterpret_cast<sockaddr_in6*>(&address)->sin6_port);
    if (bound == port) {
      ::listen(fd, SOMAXCONN);
      return;
    }
  }
}

using json = nlohmann::json;
using Clock = std::chrono::steady_clock;

// An answer that is not a translation: the status and {"error": message}.
struct HttpError {
  int status;
  std::string message;
};

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(body.dump(), "application/json");
}

json parse_body(const httplib::Request& req) {
  try {
    return json::parse(req.body);
  } catch (const json::parse_error& e) {
    throw HttpError{400, std::string("invalid JSON: ") + e.what()};
  }
}

// A model by name (a number is a name too: `--model 100=FILE` answers OpenNMT-py clients, whose
// default model id is 100), else a number by its index in --model order; null: the first model.
const ServedModel& find_model(const std::vector<ServedModel>& models, const json& id) {
  if (id.is_null()) return models.front();
  if (!id.is_string() && !id.is_number_integer()) {
    throw HttpError{400, "model id: expected a name or an index, got " + std::string(id.type_name())};
  }
  const std::string name = id.is_string() ? id.get<std::string>() : std::to_string(id.get<int64_t>());
  for (const auto& m : models) {
    if (m.name == name) return m;
  }
  if (id.is_number_integer() && id.get<int64_t>() >= 0 && id.get<int64_t>() < static_cast<int64_t>(models.size())) {
    return models[static_cast<size_t>(id.get<int64_t>())];
  }
  std::string names;
  for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.name;
  throw HttpError{404, "unknown model " + id.dump() + " (models: " + names + ")"};
}

void check_sentence(const std::string& text, size_t index, const ServeOptions& options) {
  if (text.size() > options.max_sentence_bytes) {
    throw HttpError{413, "sentence " + std::to_string(index) + " has " + std::to_string(text.size()) +
                             " bytes (at most " + std::to_string(options.max_sentence_bytes) + ")"};
  }
}

int int_field(const json& body, const char* key, int fallback, int low, int high) {
  if (!body.contains(key)) return fallback;
  const auto& v = body[key];
  if (!v.is_number_integer() || v.get<int64_t>() < low || v.get<int64_t>() > high) {
    throw HttpError{400, std::string(key) + ": expected an integer from " + std::to_string(low) + " to " +
                             std::to_string(high) + ", got " + v.dump()};
  }
  return v.get<int>();
}

// Queues the sentences and waits for them: the results, or an HttpError (503 queue full, 504
// timeout, 500 decoding failed).
std::vector<std::vector<Translation>> translate(Batcher& batcher, const ServedModel& model,
                                                const RequestOptions& options, std::vector<std::string> sentences,
                                                const ServeOptions& limits) {
  auto pending = batcher.submit(model, options, std::move(sentences));
  if (!pending) throw HttpError{503, "the queue is full (or the server is stopping); retry later"};
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(limits.request_timeout_s));
  if (!pending->wait_until(deadline)) {
    pending->cancel();
    throw HttpError{504, "not translated within " + std::to_string(limits.request_timeout_s) + " s"};
  }
  if (!pending->error().empty()) throw HttpError{500, "translation failed: " + pending->error()};
  return pending->results();
}

json attention_json(const Translation& t) {
  return {{"src", t.src_pieces}, {"tgt", t.tgt_pieces}, {"weights", t.attention}};
}

// POST /translator/translate (OpenNMT-py): a list of {"src", "id"?}; every input's n-best entries,
// in input order, in one list inside the outer list.
json opennmt_translate(const json& body, const std::vector<ServedModel>& models, Batcher& batcher,
                       const ServeOptions& limits) {
  if (!body.is_array()) throw HttpError{400, "expected a list of {\"src\": ..., \"id\": ...} objects"};
  if (body.empty()) return json::array({json::array()});
  if (body.size() > limits.max_request_sentences) {
    throw HttpError{413, std::to_string(body.size()) + " sentences in one request (at most " +
                             std::to_string(limits.max_request_sentences) + ")"};
  }
  // Group the inputs by model, keeping their positions.
  std::vector<const ServedModel*> model_of(body.size());
  std::vector<std::string> src(body.size());
  for (size_t i = 0; i < body.size(); ++i) {
    const auto& e = body[i];
    if (!e.is_object() || !e.contains("src") || !e["src"].is_string()) {
      throw HttpError{400, "entry " + std::to_string(i) + ": expected {\"src\": \"text\", \"id\": model}"};
    }
    src[i] = e["src"].get<std::string>();
    check_sentence(src[i], i, limits);
    model_of[i] = &find_model(models, e.contains("id") ? e["id"] : json());
  }
  std::vector<std::vector<Translation>> results(body.size());
  for (const auto& m : models) {
    std::vector<size_t> at;
    std::vector<std::string> lines;
    for (size_t i = 0; i < body.size(); ++i) {
      if (model_of[i] == &m) at.push_back(i), lines.push_back(src[i]);
    }
    if (lines.empty()) continue;
    const RequestOptions options{m.defaults.search.beam_size, m.defaults.search.n_best, false};
    auto out = translate(batcher, m, options, std::move(lines), limits);
    for (size_t k = 0; k < at.size(); ++k) results[at[k]] = std::move(out[k]);
  }
  json list = json::array();
  for (size_t i = 0; i < results.size(); ++i) {
    for (const auto& t : results[i]) {
      list.push_back({{"src", src[i]}, {"tgt", t.text}, {"pred_score", t.log_prob}, {"n_best", results[i].size()}});
    }
  }
  return json::array({list});
}

// POST /v1/translate
json v1_translate(const json& body, const std::vector<ServedModel>& models, Batcher& batcher,
                  const ServeOptions& limits) {
  if (!body.is_object()) throw HttpError{400, "expected an object {\"text\": [...], ...}"};
  for (const auto& [key, value] : body.items()) {
    if (key != "model" && key != "text" && key != "beam_size" && key != "n_best" && key != "attention") {
      throw HttpError{400, "unknown field '" + key + "' (fields: model, text, beam_size, n_best, attention)"};
    }
  }
  const auto& model = find_model(models, body.contains("model") ? body["model"] : json());
  if (!body.contains("text") || !body["text"].is_array()) throw HttpError{400, "text: expected a list of strings"};
  const auto& text = body["text"];
  if (text.size() > limits.max_request_sentences) {
    throw HttpError{413, "text: " + std::to_string(text.size()) + " sentences (at most " +
                             std::to_string(limits.max_request_sentences) + ")"};
  }
  std::vector<std::string> lines;
  for (size_t i = 0; i < text.size(); ++i) {
    if (!text[i].is_string()) throw HttpError{400, "text[" + std::to_string(i) + "]: expected a string"};
    lines.push_back(text[i].get<std::string>());
    check_sentence(lines.back(), i, limits);
  }
  RequestOptions options;
  options.beam_size = int_field(body, "beam_size", model.defaults.search.beam_size, 1, limits.max_beam_size);
  options.n_best = int_field(body, "n_best", std::min(model.defaults.search.n_best, options.beam_size), 1,
                             options.beam_size);
  if (body.contains("attention")) {
    if (!body["attention"].is_boolean()) throw HttpError{400, "attention: expected true or false"};
    options.attention = body["attention"].get<bool>();
  }
  const auto results = translate(batcher, model, options, std::move(lines), limits);
  json translations = json::array();
  for (const auto& n_best : results) {
    json list = json::array();
    for (const auto& t : n_best) {
      json item = {{"text", t.text}, {"score", t.score}, {"log_prob", t.log_prob}, {"tokens", t.target_tokens}};
      if (options.attention) item["attention"] = attention_json(t);
      list.push_back(item);
    }
    translations.push_back(list);
  }
  return {{"model", model.name}, {"translations", translations}};
}

}  // namespace

void serve(const std::vector<ServedModel>& models, const ServeOptions& options, const std::function<void(int)>& ready) {
  if (models.empty()) throw InputError("serve: no model");
  ServerMetrics metrics;
  Batcher batcher(options.batching, &metrics);
  httplib::Server server;
  server.new_task_queue = [n = options.http_threads] { return new httplib::ThreadPool(static_cast<size_t>(n)); };
  server.set_payload_max_length(options.max_body_bytes);
  server.set_keep_alive_max_count(10000);
  server.set_tcp_nodelay(true);  // headers and body go in two writes: without it Nagle holds the body for the client's delayed ACK
  std::atomic<bool> stopping{false};

  // Every translate endpoint: parse, answer, count.
  auto endpoint = [&](const std::string& name, auto handle) {
    return [&, name, handle](const httplib::Request& req, httplib::Response& res) {
      const auto start = Clock::now();
      try {
        if (stopping) throw HttpError{503, "the server is stopping"};
        reply(res, 200, handle(parse_body(req)));
      } catch (const HttpError& e) {
        reply(res, e.status, {{"error", e.message}});
        if (e.status == 503) res.set_header("Retry-After", "1");
      } catch (const std::exception& e) {
        reply(res, 500, {{"error", std::string("internal error: ") + e.what()}});
      }
      metrics.request(name, res.status, std::chrono::duration<double>(Clock::now() - start).count());
    };
  };
  server.Post("/translator/translate", endpoint("/translator/translate", [&](const json& body) {
                return opennmt_translate(body, models, batcher, options);
              }));
  server.Post("/v1/translate", endpoint("/v1/translate", [&](const json& body) {
                return v1_translate(body, models, batcher, options);
              }));
  server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    json list = json::array();
    for (const auto& m : models) {
      list.push_back({{"name", m.name}, {"path", m.path}, {"beam_size", m.defaults.search.beam_size},
                      {"n_best", m.defaults.search.n_best}});
    }
    reply(res, 200, {{"models", list}});
  });
  server.Get("/health", [&](const httplib::Request&, httplib::Response& res) {
    reply(res, stopping ? 503 : 200, {{"status", stopping ? "stopping" : "ok"}, {"queued", batcher.queued()}});
  });
  server.Get("/metrics", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.text(), "text/plain; version=0.0.4");
  });
  server.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    const std::string message = res.status == 413   ? "request body too large"
                                : res.status == 404 ? "no endpoint " + req.method + " " + req.path
                                                    : "bad request";
    res.set_content(json{{"error", message}}.dump(), "application/json");
  });

  int port = options.port;
  const bool bound = port == 0 ? (port = server.bind_to_any_port(options.host)) > 0
                               : server.bind_to_port(options.host, port);
  if (!bound) {
    throw RuntimeError("serve: cannot listen on " + options.host + ":" + std::to_string(options.port) +
                       " (in use, or not an address of this machine)");
  }
  raise_listen_backlog(port);
  StopSignals signals;
  std::thread watcher([&] {
    while (!stopping && !signals.received()) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (!signals.received()) return;
    spdlog::info("[serve] signal {}: no new requests; answering the {} queued sentence(s)", signals.received(),
                 batcher.queued());
    stopping = true;
    batcher.stop();  // decodes everything queued: the handlers waiting for it answer
    server.stop();   // stops accepting; listen_after_bind returns once the handlers are done
  });
  spdlog::info("[serve] {} model(s) on http://{}:{} (batches of up to {} sentences, {} ms wait, {} worker(s))",
               models.size(), options.host, port, options.batching.max_batch_sentences, options.batching.max_wait_ms,
               batcher.workers());
  if (ready) ready(port);
  server.listen_after_bind();
  stopping = true;
  watcher.join();
  batcher.stop();
  spdlog::info("[serve] stopped");
}

}  // namespace attnmt
