#include "serve/server.h"

#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <thread>

#include "decoding/alternatives.h"
#include "serve/access.h"
#include "serve/connection.h"
#include "serve/page.h"
#include "serve/page_api.h"
#include "serve/request.h"
#include "serve/simul_agent.h"
#include "serve/word_stream.h"
#include "util/error.h"
#include "util/logging.h"
#include "util/signals.h"

namespace attnmt {
namespace {

// Debian's libcpp-httplib.so listens with a backlog of 5 (CPPHTTPLIB_LISTEN_BACKLOG, fixed when
// the library was compiled): 100+ clients connecting at once overflowed it, and the connections
// it dropped waited for TCP's SYN retries, which then set the tail latency (docs/performance.md,
// "Figures behind design choices in the code"). listen() again on the bound socket raises the
// backlog; the socket is the one listening on `port`.
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

void reply(httplib::Response& res, int status, const json& body) {
  res.status = status;
  res.set_content(dump_json(body), "application/json");
}

constexpr const char* kOpenNMTPath = "/translator/translate";

// An error's body: {"error": message}; on OpenNMT-py's endpoint {"error", "status": "error"}, as its
// server answers a failed translation (with status 200 there; attnmt's statuses say whose fault).
json error_body(const std::string& path, const std::string& message) {
  json body = {{"error", message}};
  if (path == kOpenNMTPath) body["status"] = "error";
  return body;
}

// Why a model's words cannot be streamed as they are decided ("" = they can): only greedy and beam
// search under attnmt's rules say which words are decided (serve/word_stream.h).
std::string not_interactive_reason(const TranslateOptions& t) {
  if (t.search.rules != SearchRules::attnmt) {
    return "it decodes with decode.search_rules " + name_string(t.search.rules) + " (attnmt's rules only)";
  }
  if (t.search.sampling) return "it decodes with decode.sampling (no word is decided before the end)";
  if (t.mbr != MbrMetric::none) return "it decodes with decode.mbr " + name_string(t.mbr) + " (which reranks at the end)";
  return "";
}

std::vector<ModelChoice> model_choices(const std::vector<ServedModel>& models) {
  std::vector<ModelChoice> choices;
  for (const auto& m : models) {
    choices.push_back({m.name, m.defaults.search.beam_size, m.defaults.search.n_best, not_interactive_reason(m.defaults)});
  }
  return choices;
}

// How often a waiting handler looks whether its client is still there.
constexpr auto kClientCheck = std::chrono::milliseconds(100);

// Queues the sentences and waits for them: the results, or an HttpError (503 queue full, 504
// timeout, 500 decoding failed, 400 the input could not be decoded). A client that closes its
// connection meanwhile has its sentences dropped from the queue (and its request answered to no
// one, counted as abandoned).
Clock::time_point request_deadline(const ServeOptions& limits) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits.request_timeout_s));
}

// Waits until the request is translated. A timeout (504) or a client gone (499) cancels the
// request and throws.
void wait_for(Pending& pending, int socket, Clock::time_point deadline, const ServeOptions& limits,
              ServerMetrics& metrics) {
  for (;;) {
    const auto until = std::min(deadline, Clock::now() + kClientCheck);
    if (pending.wait_until(until)) return;
    if (Clock::now() >= deadline) {
      pending.cancel();
      metrics.abandoned();
      throw HttpError{504, "not translated within " + std::to_string(limits.request_timeout_s) + " s"};
    }
    if (peer_closed(socket)) {
      pending.cancel();
      metrics.abandoned();
      throw HttpError{499, "the client closed the connection"};  // nginx's code; no one reads it
    }
  }
}

// A translated request's results, or its failure as an HttpError.
const std::vector<std::vector<Translation>>& results_of(const Pending& pending) {
  if (!pending.error().empty()) {
    if (pending.input_error()) throw HttpError{400, "cannot translate: " + pending.error()};
    throw HttpError{500, "translation failed: " + pending.error()};
  }
  return pending.results();
}

RequestOptions request_options(const ModelRequest& request) {
  return {request.beam_size, request.n_best, request.attention};
}

std::shared_ptr<Pending> submit(Batcher& batcher, const ServedModel& model, const ModelRequest& request,
                                Watcher watcher = {}) {
  auto pending = batcher.submit(model, request_options(request), request.sentences, std::move(watcher));
  if (!pending) throw HttpError{503, "the queue is full (or the server is stopping); retry later"};
  return pending;
}

std::vector<std::vector<Translation>> translate(Batcher& batcher, const ServedModel& model, const ModelRequest& request,
                                                const httplib::Request& http, const ServeOptions& limits,
                                                ServerMetrics& metrics) {
  auto pending = submit(batcher, model, request);
  const int socket = find_connection_socket(http.remote_addr, http.remote_port, http.local_port);
  wait_for(*pending, socket, request_deadline(limits), limits, metrics);
  return results_of(*pending);
}

json attention_json(const Translation& t) {
  json a = {{"src", t.src_pieces}, {"tgt", t.tgt_pieces}, {"weights", t.attention}};
  a.update(word_alignment_json(t));  // src_words, tgt_words, links
  return a;
}

// An OpenNMT-py input's parts: the whitespace before and after it, and what is between. Its
// server (onmt/translate/translation_server.py) takes `^\s+` and `\s+$` off and puts them back
// around the translation; a blank input (both match all of it) is not translated.
struct Padded {
  std::string head, text, tail;
};

Padded split_whitespace(const std::string& src) {
  const char* space = " \t\n\v\f\r";
  const auto first = src.find_first_not_of(space);
  if (first == std::string::npos) return {src, "", src};
  const auto last = src.find_last_not_of(space);
  return {src.substr(0, first), src.substr(first, last + 1 - first), src.substr(last + 1)};
}

// POST /translator/translate, as OpenNMT-py's onmt/bin/server.py answers (tests/e2e/test_serve.cpp
// compares with its recorded answers): n_best lists, the k-th holding every input's k-th best
// {"src", "tgt", "n_best", "pred_score"} in input order (`out[i % n_best]` there). A blank input
// gets tgt = its whitespace twice (head and tail) and pred_score 0 in every list, as there; an input
// that search found fewer than n_best hypotheses for (never with the toolkits' rules) gets tgt ""
// and pred_score null in the lists it has none for.
json opennmt_translate(const json& body, const httplib::Request& http, const std::vector<ServedModel>& models,
                       Batcher& batcher, const ServeOptions& limits, ServerMetrics& metrics) {
  const auto requests = parse_opennmt_request(body, model_choices(models), request_limits(limits));
  const int n_best = requests.empty() ? 1 : requests[0].n_best;
  std::vector<Padded> inputs(body.size());
  std::vector<std::vector<Translation>> results(body.size());
  for (const auto& r : requests) {
    ModelRequest words = r;  // the inputs that are not blank, without their whitespace
    words.sentences.clear();
    words.positions.clear();
    for (size_t k = 0; k < r.positions.size(); ++k) {
      inputs[r.positions[k]] = split_whitespace(r.sentences[k]);
      if (inputs[r.positions[k]].text.empty()) continue;
      words.sentences.push_back(inputs[r.positions[k]].text);
      words.positions.push_back(r.positions[k]);
    }
    if (words.sentences.empty()) continue;
    auto out = translate(batcher, models[r.model], words, http, limits, metrics);
    for (size_t k = 0; k < words.positions.size(); ++k) results[words.positions[k]] = std::move(out[k]);
  }
  json lists = json::array();
  for (int k = 0; k < n_best; ++k) {
    json list = json::array();
    for (size_t i = 0; i < results.size(); ++i) {
      const auto& in = inputs[i];
      json entry = {{"src", body[i]["src"]}, {"n_best", n_best}};
      if (in.text.empty()) {
        entry["tgt"] = in.head + in.tail;
        entry["pred_score"] = 0.0;
      } else if (static_cast<size_t>(k) < results[i].size()) {
        entry["tgt"] = in.head + results[i][static_cast<size_t>(k)].text + in.tail;
        entry["pred_score"] = results[i][static_cast<size_t>(k)].score;
      } else {
        entry["tgt"] = "";
        entry["pred_score"] = nullptr;
      }
      list.push_back(std::move(entry));
    }
    lists.push_back(std::move(list));
  }
  return lists;
}

// POST /v1/translate's answer.
json v1_answer(const ServedModel& model, const ModelRequest& request,
               const std::vector<std::vector<Translation>>& results) {
  json translations = json::array();
  for (const auto& n_best : results) {
    json list = json::array();
    for (const auto& t : n_best) {
      json item = {{"text", t.text}, {"score", t.score}, {"log_prob", t.log_prob}, {"tokens", t.target_tokens}};
      if (request.attention) item["attention"] = attention_json(t);
      list.push_back(item);
    }
    translations.push_back(list);
  }
  return {{"model", model.name}, {"translations", translations}};
}

// POST /v1/translate, not streamed.
json v1_translate(const ModelRequest& request, const httplib::Request& http, const std::vector<ServedModel>& models,
                  Batcher& batcher, const ServeOptions& limits, ServerMetrics& metrics) {
  const auto& model = models[request.model];
  return v1_answer(model, request, translate(batcher, model, request, http, limits, metrics));
}

// POST /v1/translate with "stream": true (serve/word_stream.h). Until the first word is decided,
// failures are answered as for a request not streamed (4xx/5xx, thrown); then 200 with
// text/event-stream, written by the HTTP thread as the batch worker decides the words, and a
// failure is an error event. A client that goes away (a write fails, or its socket reads as
// closed) stops its sentence's search. `answered(status)` is called once the stream ends.
void v1_translate_stream(const ModelRequest& request, const httplib::Request& http, httplib::Response& res,
                         const std::vector<ServedModel>& models, Batcher& batcher, const ServeOptions& limits,
                         ServerMetrics& metrics, std::function<void(int)> answered) {
  const auto& model = models[request.model];
  auto words = std::make_shared<WordStream>(*model.tokenizers->tgt);
  Watcher watcher{[words](size_t, const std::vector<int64_t>& decided) { return words->decided(decided); },
                  [words] { words->end(); }};
  auto pending = submit(batcher, model, request, std::move(watcher));
  const int socket = find_connection_socket(http.remote_addr, http.remote_port, http.local_port);
  const auto deadline = request_deadline(limits);
  // Whether the client is gone or the time is up: the request is then cancelled (its sentence's
  // search stops at its next step) and counted as abandoned.
  auto give_up = [socket, deadline, &metrics, words, pending]() -> int {
    const int status = Clock::now() >= deadline ? 504 : peer_closed(socket) ? 499 : 0;
    if (status != 0) {
      words->close();
      pending->cancel();
      metrics.abandoned();
    }
    return status;
  };
  while (!words->wait(std::min(deadline, Clock::now() + kClientCheck))) {
    const int status = give_up();
    if (status == 504) throw HttpError{504, "not translated within " + std::to_string(limits.request_timeout_s) + " s"};
    if (status == 499) throw HttpError{499, "the client closed the connection"};
  }
  if (words->ended()) results_of(*pending);  // a failure before any word: a plain error answer
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  // The provider runs on this connection's thread after the handler returns; it ends the stream
  // (sink.done) or returns false (the connection is then dropped).
  auto ended = std::make_shared<int>(0);
  res.set_chunked_content_provider(
      "text/event-stream",
      [&model, request, words, pending, give_up, &limits, &metrics, ended](size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& events) {
          return events.empty() || sink.write(events.data(), events.size());
        };
        auto gone = [&] {
          words->close();
          pending->cancel();
          metrics.abandoned();
          *ended = 499;
          return false;
        };
        for (;;) {
          const bool last = words->ended();  // then everything is queued: take it and finish
          if (!write(words->take(last ? Clock::now() : Clock::now() + kClientCheck))) return gone();
          if (last) break;
          if (const int status = give_up(); status != 0) {
            *ended = status;
            if (status == 499) return false;
            write(sse_event("error", {{"error", "not translated within " + std::to_string(limits.request_timeout_s) +
                                                    " s"}}));
            sink.done();
            return true;
          }
        }
        std::string events;
        try {
          const auto& results = results_of(*pending);
          events = words->finish(results[0][0].text, v1_answer(model, request, results));
          *ended = 200;
        } catch (const HttpError& e) {
          events = sse_event("error", {{"error", e.message}});
          *ended = e.status;
        }
        if (!write(events)) return gone();
        sink.done();
        return true;
      },
      [ended, answered](bool) { answered(*ended == 0 ? 499 : *ended); });
}

// POST /v1/alternatives (decoding/alternatives.h), decoded on the request's own thread (one
// forced pass and a batch of k completions): {"model", "prefix": {"text", "pieces"},
// "alternatives": [{"piece", "log_prob", "prob", "translation": {"text", "score", "log_prob",
// "tokens"}}, ...k, the most probable first]}. A prefix with no room left: 400.
json v1_alternatives(const json& body, const std::vector<ServedModel>& models, const ServeOptions& limits) {
  const auto request = parse_alternatives_request(body, model_choices(models), request_limits(limits));
  const auto& model = models[request.model];
  TranslateOptions options = model.defaults;
  options.search.beam_size = request.beam_size;
  options.search.n_best = 1;
  options.search.return_attention = false;
  options.workers = 1;
  Alternatives found;
  try {
    found = next_alternatives(*model.step, *model.tokenizers, request.text,
                              {request.prefix, request.k, request.prefix_bias_beta}, options);
  } catch (const InputError& e) {
    throw HttpError{400, e.what()};
  }
  json list = json::array();
  for (const auto& a : found.next) {
    const auto& t = a.completion;
    list.push_back({{"piece", a.piece},
                    {"log_prob", a.log_prob},
                    {"prob", std::exp(a.log_prob)},
                    {"translation",
                     {{"text", t.text}, {"score", t.score}, {"log_prob", t.log_prob}, {"tokens", t.target_tokens}}}});
  }
  return {{"model", model.name},
          {"prefix", {{"text", request.prefix}, {"pieces", found.prefix_pieces}}},
          {"prefix_bias_beta", request.prefix_bias_beta},
          {"alternatives", list}};
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
  if (options.access.api_key.empty() && !is_loopback_host(options.host)) {
    spdlog::warn("[serve] listening on {}, which is not a loopback address, and no --api-key is set: anyone who "
                 "can reach this port can use it", options.host);
  }
  // The API key and CORS, before any endpoint (access.h says which requests need the key).
  server.set_pre_routing_handler([&](const httplib::Request& req, httplib::Response& res) {
    const auto d = check_access(options.access, req.method, req.path, req.get_header_value("Authorization"),
                                req.get_header_value("Origin"));
    for (const auto& [key, value] : d.headers) res.set_header(key, value);
    if (d.status == 0) return httplib::Server::HandlerResponse::Unhandled;
    res.status = d.status;
    if (d.status == 401) {
      reply(res, 401, error_body(req.path, d.message));
      metrics.accepted();
      metrics.request("unauthorized", 401, 0);
    }
    return httplib::Server::HandlerResponse::Handled;
  });

  // Every JSON endpoint: answer what `call` returns, or the error it throws; count it.
  auto answer = [&](const std::string& name, const httplib::Request& req, httplib::Response& res, auto call) {
    const auto start = Clock::now();
    metrics.accepted();
    try {
      if (stopping) throw HttpError{503, "the server is stopping"};
      reply(res, 200, call());
    } catch (const HttpError& e) {
      reply(res, e.status, error_body(req.path, e.message));
      if (e.status == 503) res.set_header("Retry-After", "1");
    } catch (const std::exception& e) {
      reply(res, 500, error_body(req.path, std::string("internal error: ") + e.what()));
    }
    metrics.request(name, res.status, std::chrono::duration<double>(Clock::now() - start).count());
  };
  // Every translate endpoint: parse, answer, count.
  auto endpoint = [&](const std::string& name, auto handle) {
    return [&, name, handle](const httplib::Request& req, httplib::Response& res) {
      answer(name, req, res, [&] { return handle(parse_json_body(req.body), req); });
    };
  };
  server.Post(kOpenNMTPath, endpoint(kOpenNMTPath, [&](const json& body, const httplib::Request& req) {
                return opennmt_translate(body, req, models, batcher, options, metrics);
              }));
  // POST /v1/translate: as the endpoints above, or, with "stream": true, server-sent events, whose
  // answer is counted when the stream ends.
  server.Post("/v1/translate", [&](const httplib::Request& req, httplib::Response& res) {
    const auto start = Clock::now();
    metrics.accepted();
    auto answered = [&metrics, start](int status) {
      metrics.request("/v1/translate", status, std::chrono::duration<double>(Clock::now() - start).count());
    };
    try {
      if (stopping) throw HttpError{503, "the server is stopping"};
      const auto request = parse_v1_request(parse_json_body(req.body), model_choices(models), request_limits(options));
      if (request.stream) {
        v1_translate_stream(request, req, res, models, batcher, options, metrics, answered);
        return;
      }
      reply(res, 200, v1_translate(request, req, models, batcher, options, metrics));
    } catch (const HttpError& e) {
      reply(res, e.status, error_body(req.path, e.message));
      if (e.status == 503) res.set_header("Retry-After", "1");
    } catch (const std::exception& e) {
      reply(res, 500, error_body(req.path, std::string("internal error: ") + e.what()));
    }
    answered(res.status);
  });
  server.Post("/v1/alternatives", endpoint("/v1/alternatives", [&](const json& body, const httplib::Request&) {
                return v1_alternatives(body, models, options);
              }));
  // The translation page (serve/page.h) and the endpoints it added (serve/page_api.h).
  std::timed_mutex stream_gate;
  server.Get("/", [](const httplib::Request&, httplib::Response& res) {
    for (const auto& [key, value] : page_headers()) res.set_header(key, value);
    res.set_content(page_html(), "text/html; charset=utf-8");
  });
  server.Post("/v1/score", endpoint("/v1/score", [&](const json& body, const httplib::Request&) {
                return score_json(body, options.max_request_sentences, options.max_sentence_bytes);
              }));
  server.Post("/v1/stream", endpoint("/v1/stream", [&](const json& body, const httplib::Request&) {
                return stream_json(body, models, options, stream_gate);
              }));
  // SimulEval's remote protocol (serve/simul_agent.h), on the first model.
  SimulAgent simul(models.front());
  spdlog::info("[serve] SimulEval's remote protocol (POST /reset, PUT /input, GET /output): model '{}', policy {}",
               models.front().name, simul.policy());
  server.Post("/reset", [&](const httplib::Request& req, httplib::Response& res) {
    answer("/reset", req, res, [&] {
      simul.reset();
      return json::object();
    });
  });
  server.Put("/input", endpoint("/input", [&](const json& body, const httplib::Request&) {
               simul.input(parse_simul_segment(body, request_limits(options)));
               return json::object();
             }));
  server.Get("/output", [&](const httplib::Request& req, httplib::Response& res) {
    answer("/output", req, res, [&] { return simul.output(); });
  });
  server.Get("/v1/models", [&](const httplib::Request&, httplib::Response& res) {
    json list = json::array();
    for (const auto& m : models) {
      list.push_back({{"name", m.name}, {"path", m.path}, {"beam_size", m.defaults.search.beam_size},
                      {"n_best", m.defaults.search.n_best}, {"attention", m.attention}, {"streaming", m.streams}});
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
    res.set_content(dump_json(error_body(req.path, message)), "application/json");
  });
  // What a handler throws past its own catch is the server's failure: 500, said so, never a crash.
  server.set_exception_handler([](const httplib::Request& req, httplib::Response& res, std::exception_ptr e) {
    std::string what = "unknown";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    spdlog::error("[serve] a handler failed: {}", what);
    res.status = 500;
    res.set_content(dump_json(error_body(req.path, "internal error: " + what)), "application/json");
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
  spdlog::info("[serve] {} model(s) on http://{}:{} ({} batches of up to {} sentences, {} ms wait, {} worker(s))",
               models.size(), options.host, port, options.batching.continuous ? "continuous" : "static",
               batch_sentences(options.batching), options.batching.max_wait_ms, batcher.workers());
  if (ready) ready(port);
  server.listen_after_bind();
  stopping = true;
  watcher.join();
  batcher.stop();
  spdlog::info("[serve] stopped: {} request(s) accepted, {} answered", metrics.accepted_count(),
               metrics.answered_count());
}

}  // namespace attnmt
