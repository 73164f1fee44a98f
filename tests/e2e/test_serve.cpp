// attnmt serve through the real program on a tiny model: both API shapes, dynamic batching gives
// `attnmt translate`'s translations, every error status, metrics, and a graceful stop with a
// request in flight. Skipped with a message where cpp-httplib is missing (the client is its too).
#include <catch2/catch.hpp>

#if __has_include(<httplib.h>)
#include <httplib.h>
#define ATTNMT_TEST_HTTP 1
#endif

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <functional>
#include <future>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>
#include <tuple>

#include "eval/simuleval_log.h"
#include "program.h"
#include "util/text_io.h"

using namespace attnmt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;

#ifdef ATTNMT_TEST_HTTP
namespace {


// A server started in the background: its port once it listens, its exit status once it ends.
struct Server {
  fs::path dir;
  int port = 0;
  bool missing = false;  // built without cpp-httplib

  // `program`: attnmt, or the engine with the tests' hooks (ATTNMT_TEST_HOOKS_ENGINE_BINARY).
  Server(const fs::path& d, const std::string& args, const std::string& env = "",
         const std::string& program = ATTNMT_BINARY)
      : dir(d) {
    fs::remove(dir / "serve.rc");
    shell("( " + env + " " + program + " serve --port 0 " + args + " > " + (dir / "serve.log").string() +
          " 2>&1 & pid=$!; echo $pid > " + (dir / "serve.pid").string() + "; wait $pid; echo $? > " +
          (dir / "serve.rc").string() + " ) > /dev/null 2>&1 &");
    for (int i = 0; i < 600 && port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto log = attnmt::read_file((dir / "serve.log").string());
      if (log.find("without cpp-httplib") != std::string::npos) {
        missing = true;
        return;
      }
      const auto at = log.find(" on http://");  // 127.0.0.1, or the --host given
      const auto colon = at == std::string::npos ? at : log.find(':', at + 11);
      if (colon != std::string::npos && colon + 1 < log.size() && std::isdigit(log[colon + 1])) {
        port = std::stoi(log.substr(colon + 1));
      }
      if (fs::exists(dir / "serve.rc")) break;  // it ended before listening
    }
  }
  std::string log() const { return attnmt::read_file((dir / "serve.log").string()); }
  void signal(const char* name) const {
    shell(std::string("kill -") + name + " $(cat " + (dir / "serve.pid").string() + ")");
  }
  int wait() const {  // its exit status; -1 if it did not end within 60 s
    for (int i = 0; i < 600; ++i) {
      if (fs::exists(dir / "serve.rc") && !attnmt::read_file((dir / "serve.rc").string()).empty()) {
        return std::stoi(attnmt::read_file((dir / "serve.rc").string()));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return -1;
  }
  ~Server() {
    if (!fs::exists(dir / "serve.rc")) signal("KILL");
  }
};

// An attnmt built without cpp-httplib starts no server: the test is skipped, saying so.
#define SKIP_WITHOUT_SERVE(server)                                                                 \
  if ((server).missing) {                                                                          \
    ATTNMT_MISSING_DEPENDENCY("SKIPPED: attnmt was built without cpp-httplib: serve was not tested"); \
    return;                                                                                        \
  }

struct Reply {
  int status = 0;
  json body;
  std::string text, retry_after;
};

// status 0 when no answer came
Reply reply_of(const httplib::Result& r) {
  Reply reply;
  if (!r) return reply;
  reply.status = r->status;
  reply.text = r->body;
  reply.body = json::parse(r->body, nullptr, false);
  reply.retry_after = r->get_header_value("Retry-After");
  return reply;
}

Reply post(int port, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  return reply_of(client.Post(path.c_str(), body, "application/json"));
}

Reply put(int port, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  return reply_of(client.Put(path.c_str(), body, "application/json"));
}

Reply get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  return reply_of(client.Get(path.c_str()));
}

fs::path tiny_model(const fs::path& dir) {
  write(dir / "t.yaml", tiny_config(dir / "model", 80));
  auto r = run("train " + (dir / "t.yaml").string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  return dir / "model";
}

}  // namespace
#endif

TEST_CASE("serve: OpenNMT-py and v1 shapes, batching equals translate, errors, metrics, graceful stop",
          "[serve][e2e]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  auto expected = run("translate --model " + model.string() + " --input " + kData + "/tiny.de --beam-size 3 --output " +
                      (dir / "want.txt").string());
  REQUIRE(expected.status == 0);
  const auto want = attnmt::read_lines((dir / "want.txt").string());
  REQUIRE(want.size() == lines.size());

  Server server(dir, "--model tiny=" + model.string() + " --beam-size 3 --max-wait-ms 30 --max-batch-sentences 16 "
                     "--max-queue 64 --max-request-sentences 40 --max-body-bytes 20000");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;

  CHECK(get(port, "/health").body["status"] == "ok");
  const auto models = get(port, "/v1/models").body;
  REQUIRE(models["models"].size() == 1);
  CHECK(models["models"][0]["name"] == "tiny");

  // OpenNMT-py's shape: [[{src, tgt, pred_score, n_best}]], in input order; id by name or index
  auto r = post(port, "/translator/translate",
                json::array({{{"src", lines[0]}, {"id", 0}}, {{"src", lines[1]}, {"id", "tiny"}}, {{"src", lines[2]}}})
                    .dump());
  REQUIRE(r.status == 200);
  REQUIRE(r.body.is_array());
  REQUIRE(r.body.size() == 1);
  REQUIRE(r.body[0].size() == 3);
  for (size_t i = 0; i < 3; ++i) {
    CHECK(r.body[0][i]["src"] == lines[i]);
    CHECK(r.body[0][i]["tgt"] == want[i]);
    CHECK(r.body[0][i]["n_best"] == 1);
    CHECK(r.body[0][i]["pred_score"].get<double>() <= 0);
  }

  // Dynamic batching: concurrent requests (single sentences and one of all 30) are batched
  // together and each gets translate's translations.
  std::vector<std::future<Reply>> replies;
  replies.push_back(std::async(std::launch::async, [&] {
    return post(port, "/v1/translate", json{{"text", lines}, {"model", "tiny"}}.dump());
  }));
  for (size_t i = 0; i < 12; ++i) {
    replies.push_back(std::async(std::launch::async, [&, i] {
      return post(port, "/v1/translate", json{{"text", {lines[i]}}}.dump());
    }));
  }
  for (size_t k = 0; k < replies.size(); ++k) {
    const auto reply = replies[k].get();
    INFO("request " << k << ": " << reply.text);
    REQUIRE(reply.status == 200);
    const auto& t = reply.body["translations"];
    if (k == 0) {
      REQUIRE(t.size() == lines.size());
      for (size_t i = 0; i < lines.size(); ++i) CHECK(t[i][0]["text"] == want[i]);
    } else {
      REQUIRE(t.size() == 1);
      CHECK(t[0][0]["text"] == want[k - 1]);
    }
  }
  const auto metrics = get(port, "/metrics").text;
  CHECK_THAT(metrics, Contains("attnmt_requests_total{endpoint=\"/v1/translate\",status=\"200\"} 13"));
  CHECK_THAT(metrics, Contains("attnmt_sentences_total 45"));  // 3 + 30 + 12
  CHECK_THAT(metrics, Contains("attnmt_batch_sentences_bucket{le=\"+Inf\"}"));
  // fewer batches than requests: sentences of different requests went together
  const auto at = metrics.find("\nattnmt_batches_total ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(metrics.substr(at + 22)) < 14);

  // n-best, beam and attention per request
  r = post(port, "/v1/translate", json{{"text", {lines[0]}}, {"beam_size", 4}, {"n_best", 2}, {"attention", true}}.dump());
  REQUIRE(r.status == 200);
  REQUIRE(r.body["translations"][0].size() == 2);
  const auto& best = r.body["translations"][0][0];
  CHECK(best["score"].get<double>() >= r.body["translations"][0][1]["score"].get<double>());
  CHECK(best["attention"]["weights"].size() == best["attention"]["tgt"].size());

  // errors: status and one message
  struct Bad {
    std::string path, body;
    int status;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"/v1/translate", "{\"text\": [", 400, "invalid JSON"},
      {"/v1/translate", "{\"text\": \"one\"}", 400, "text: expected a list of strings"},
      {"/v1/translate", "{\"text\": [1]}", 400, "text[0]: expected a string"},
      {"/v1/translate", "{\"text\": [\"a\"], \"beam_size\": 0}", 400, "beam_size: expected an integer from 1 to 32"},
      {"/v1/translate", "{\"text\": [\"a\"], \"n_best\": 9}", 400, "n_best: expected an integer from 1 to 3"},
      {"/v1/translate", "{\"text\": [\"a\"], \"colour\": 1}", 400, "unknown field 'colour'"},
      {"/v1/translate", "{\"text\": [\"\\xff\"]}", 400, "invalid JSON"},
      {"/v1/translate", "{\"text\": [\"\xff\"]}", 400, "the body is not UTF-8"},
      {"/v1/translate", "{\"text\": [\"a\"], \"model\": \"nope\"}", 404, "unknown model \"nope\" (models: tiny)"},
      {"/translator/translate", "[{\"src\": \"a\", \"id\": 7}]", 404, "unknown model 7"},
      {"/translator/translate", "{\"src\": \"a\"}", 400, "expected a list"},
      {"/v1/translate", json{{"text", std::vector<std::string>(41, "a")}}.dump(), 413, "41 sentences"},
      {"/v1/translate", json{{"text", {std::string(5000, 'a')}}}.dump(), 413, "sentence 0 has 5000 bytes"},
      {"/v1/translate", json{{"text", {std::string(30000, 'a')}}}.dump(), 413, "request body too large"},
      {"/v1/nothing", "{}", 404, "no endpoint POST /v1/nothing"},
  };
  for (const auto& b : bad) {
    INFO(b.path << " " << b.body.substr(0, 80));
    r = post(port, b.path, b.body);
    CHECK(r.status == b.status);
    CHECK_THAT(r.body.value("error", std::string()), Contains(b.message));
  }
  // the server still works after all that
  CHECK(post(port, "/v1/translate", json{{"text", {lines[3]}}}.dump()).body["translations"][0][0]["text"] == want[3]);

  // SIGTERM with a request waiting in the queue: one worker decodes a slow request (long
  // sentences, as many as a batch holds, so that no other joins its running search) while a
  // second request waits behind it, seen waiting in /metrics' queue depth when the signal is
  // sent; both are answered, then the server exits 0.
  fs::create_directories(dir / "slow");
  Server waiting(dir / "slow", "--model " + model.string() + " --beam-size 3 --workers 1 --max-wait-ms 5000 "
                               "--max-batch-sentences 16 --timeout 300");
  REQUIRE(waiting.port > 0);
  std::string slow_line;
  while (slow_line.size() < 3000) slow_line += lines[0] + " ";
  auto busy = std::async(std::launch::async, [&] {
    return post(waiting.port, "/v1/translate", json{{"text", std::vector<std::string>(16, slow_line)}}.dump());
  });
  auto queue_depth = [&] {
    const auto text = get(waiting.port, "/metrics").text;
    const std::string key = "\nattnmt_queue_sentences ";
    const auto at = text.find(key);
    return at == std::string::npos ? -1 : std::stoi(text.substr(at + key.size()));
  };
  // The slow request has left the queue for the worker (depth 0 after a batch was taken)...
  auto until = [](const std::function<bool()>& done) {
    for (int i = 0; i < 400 && !done(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(25));
    return done();
  };
  REQUIRE(until([&] {
    const auto text = get(waiting.port, "/metrics").text;  // a static batch taken, or a running search stepping
    return (text.find("\nattnmt_batches_total 1\n") != std::string::npos ||
            text.find("\nattnmt_running_steps_total 0\n") == std::string::npos) &&
           queue_depth() == 0;
  }));
  auto queued = std::async(std::launch::async, [&] {
    return post(waiting.port, "/v1/translate", json{{"text", {lines[0], lines[1], lines[2]}}}.dump());
  });
  // ...and the second waits behind it: its 3 sentences in the queue while the signal arrives.
  INFO(waiting.log());
  REQUIRE(until([&] { return queue_depth() == 3; }));
  waiting.signal("TERM");
  const auto answered = queued.get();
  CHECK(answered.status == 200);
  REQUIRE(answered.body["translations"].size() == 3);
  CHECK(answered.body["translations"][2][0]["text"] == want[2]);
  const auto slow = busy.get();
  CHECK(slow.status == 200);
  CHECK(slow.body["translations"].size() == 16);
  CHECK(waiting.wait() == 0);
  CHECK_THAT(waiting.log(), Contains("signal 15") && Contains("[serve] stopped"));

  // a full queue: 503 with Retry-After; a timeout: 504
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::create_directories(dir / "tight");
  Server small(dir / "tight", "--model " + model.string() + " --max-queue 2 --timeout 0.001 --max-wait-ms 200");
  REQUIRE(small.port > 0);
  r = post(small.port, "/v1/translate", json{{"text", {"a", "b", "c"}}}.dump());
  CHECK(r.status == 503);
  CHECK(r.retry_after == "1");
  // Long sentences, so that decoding takes far longer than the 1 ms allowed even on a fast CPU (a
  // lone request is dispatched at once, and a one-word sentence can decode within 1 ms).
  std::string long_line;
  while (long_line.size() < 2000) long_line += lines[0] + " ";
  r = post(small.port, "/v1/translate", json{{"text", {long_line, long_line}}}.dump());
  CHECK(r.status == 504);
  CHECK_THAT(r.body.value("error", std::string()), Contains("not translated within"));
  small.signal("INT");
  CHECK(small.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: a model converted from OpenNMT-py serves what translate writes", "[serve][e2e][convert]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_converted");
  const fs::path fixture = fs::path(kData) / "convert" / "onmt_brnn_lstm_general";
  const auto settings = json::parse(attnmt::read_file((fixture / "settings.json").string()));
  const auto model = dir / "converted.pt";
  auto r = run("convert --from opennmt-py " + (fixture / settings["checkpoint"].get<std::string>()).string() +
               " --output " + model.string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  const auto input = (fixture / "src.txt").string();
  r = run("translate --model " + model.string() + " --input " + input + " --output " + (dir / "want.txt").string());
  REQUIRE(r.status == 0);
  const auto want = attnmt::read_lines((dir / "want.txt").string());
  const auto lines = attnmt::read_lines(input);
  Server server(dir, "--model onmt=" + model.string());
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  json request = json::array();
  for (size_t i = 0; i < 10; ++i) request.push_back({{"src", lines[i]}, {"id", "onmt"}});
  const auto reply = post(server.port, "/translator/translate", request.dump());
  REQUIRE(reply.status == 200);
  for (size_t i = 0; i < 10; ++i) CHECK(reply.body[0][i]["tgt"] == want[i]);
  // OpenNMT-py's search rules say no word is decided before the end: streaming is refused.
  const auto streamed = post(server.port, "/v1/translate", json{{"text", {lines[0]}}, {"stream", true}}.dump());
  CHECK(streamed.status == 400);
  CHECK_THAT(streamed.body.value("error", std::string()), Contains("decode.search_rules opennmt"));
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

#ifdef ATTNMT_TEST_HTTP
namespace {

// Where attnmt's answer differs from OpenNMT-py's in shape: the same nesting, the same keys, equal
// strings, integers and nulls; floats (pred_score) within `tolerance`, the largest difference in
// `worst`. Each difference is one "path: what" line.
void compare_shape(const json& want, const json& got, const std::string& path, double tolerance,
                   std::vector<std::string>& diffs, double& worst) {
  auto differ = [&](const std::string& what) { diffs.push_back(path + ": " + what); };
  if (want.is_number_float()) {
    if (!got.is_number()) return differ("a number in OpenNMT-py's answer, " + got.dump() + " in attnmt's");
    const double d = std::abs(want.get<double>() - got.get<double>());
    worst = std::max(worst, d);
    if (d > tolerance) differ(want.dump() + " vs " + got.dump());
    return;
  }
  if (want.type() != got.type()) return differ(want.dump() + " vs " + got.dump());
  if (want.is_array()) {
    if (want.size() != got.size()) {
      return differ(std::to_string(want.size()) + " entries vs " + std::to_string(got.size()));
    }
    for (size_t i = 0; i < want.size(); ++i) {
      compare_shape(want[i], got[i], path + "[" + std::to_string(i) + "]", tolerance, diffs, worst);
    }
  } else if (want.is_object()) {
    for (const auto& [key, value] : want.items()) {
      if (!got.contains(key)) {
        differ("no key '" + key + "' in attnmt's answer");
      } else {
        compare_shape(value, got[key], path + "." + key, tolerance, diffs, worst);
      }
    }
    for (const auto& [key, value] : got.items()) {
      if (!want.contains(key)) differ("key '" + key + "' is not in OpenNMT-py's answer");
    }
  } else if (want != got) {
    differ(want.dump() + " vs " + got.dump());
  }
}

}  // namespace
#endif

// tests/data/convert/onmt_brnn_lstm_general/rest_nbest{1,3}.json: what OpenNMT-py 2.3's own REST
// server answered (scripts/convert_fixtures/onmt_rest.py). attnmt serves the converted model with
// the conf's beam_size and n_best and must answer the same requests with the same JSON, key for
// key: n_best lists of every input's k-th best, blank inputs and the whitespace around inputs as
// OpenNMT-py treats them, pred_score within 1e-4 (as tests/e2e/test_convert.cpp compares scores;
// the recorded server decoded the 8 lines as one batch, whose scores differ from batch 1's by up to
// 1.2e-5 there).
TEST_CASE("serve: /translator/translate answers as OpenNMT-py's own server does (n_best 1 and 3, blank inputs, errors)",
          "[serve][e2e][convert]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_opennmt_shape");
  const fs::path fixture = fs::path(kData) / "convert" / "onmt_brnn_lstm_general";
  const auto model = dir / "converted.pt";
  auto r = run("convert --from opennmt-py " + (fixture / "model.pt").string() + " --output " + model.string());
  INFO(r.output);
  REQUIRE(r.status == 0);
  for (const int n_best : {1, 3}) {
    const auto recorded =
        json::parse(attnmt::read_file((fixture / ("rest_nbest" + std::to_string(n_best) + ".json")).string()));
    const auto& served = recorded["conf"]["models"][0];  // id 100; id 101 asks for alignments too
    REQUIRE(served["id"] == 100);
    REQUIRE(served["opt"]["n_best"] == n_best);
    const auto here = dir / ("n_best" + std::to_string(n_best));
    fs::create_directories(here);
    Server server(here, "--model 100=" + model.string() + " --beam-size " + served["opt"]["beam_size"].dump() +
                            " --n-best " + std::to_string(n_best));
    SKIP_WITHOUT_SERVE(server);
    INFO(server.log());
    REQUIRE(server.port > 0);
    REQUIRE(recorded["exchanges"].size() == 3);
    double worst = 0;
    for (const auto& exchange : recorded["exchanges"]) {
      const auto& want = exchange["response"];
      const auto got = post(server.port, "/translator/translate", exchange["request"].dump());
      INFO("n_best " << n_best << ", request " << exchange["request"].dump().substr(0, 200)
                     << "\nattnmt: " << got.text.substr(0, 2000));
      if (want.is_object() && want.contains("error")) {
        // OpenNMT-py's one JSON error: model 101 was asked for alignments, which its RNN models cannot
        // give ("'tuple' object has no attribute 'size'"; status 200 there). attnmt serves no model
        // 101: its error has the same keys (the message is its own; the status says whose fault).
        CHECK(got.status == 404);
        REQUIRE(got.body.is_object());
        for (const auto& [key, value] : want.items()) CHECK(got.body.contains(key));
        CHECK(got.body.size() == want.size());
        CHECK(got.body.value("status", json()) == want["status"]);
        CHECK(!got.body.value("error", std::string()).empty());
        continue;
      }
      REQUIRE(exchange["status"] == 200);
      CHECK(got.status == 200);
      std::vector<std::string> diffs;
      compare_shape(want, got.body, "answer", 1e-4, diffs, worst);
      for (const auto& d : diffs) FAIL_CHECK(d);
      CHECK(want.size() == static_cast<size_t>(n_best));
    }
    WARN("n_best " << n_best << ": attnmt answers as OpenNMT-py's server; largest pred_score difference " << worst);
    server.signal("TERM");
    CHECK(server.wait() == 0);
  }
  fs::remove_all(dir);
#endif
}

// Converted fairseq and Marian models served (tests/data/convert/fairseq_wiseman, marian_s2s): the
// rules the model stores (decode.search_rules: fairseq, marian) hold over HTTP too, so
// /v1/translate's n-best lists are what fairseq-generate and marian-decoder wrote (expected.jsonl,
// beam 5, n-best 5: every hypothesis and its score; Marian's printed to 6 significant digits), as
// `translate` gives them (tests/e2e/test_convert.cpp).
TEST_CASE("serve: converted fairseq and Marian models answer with their toolkit's n-best lists", "[serve][e2e][convert]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  for (const std::string name : {"fairseq_wiseman", "marian_s2s"}) {
    INFO(name);
    auto dir = temp_dir("serve_" + name);
    const fs::path fixture = fs::path(kData) / "convert" / name;
    const auto model = dir / "converted.pt";
    const bool marian = name == "marian_s2s";
    auto r = run(marian ? "convert --from marian " + (fixture / "model.npz").string() + " --vocabs " +
                              (fixture / "vocab.de.yml").string() + " " + (fixture / "vocab.en.yml").string() +
                              " --output " + model.string()
                        : "convert --from fairseq " + (fixture / "checkpoint.pt").string() + " --data-dir " +
                              fixture.string() + " --output " + model.string());
    INFO(r.output);
    REQUIRE(r.status == 0);
    Server server(dir, "--model " + model.string() + " --beam-size 5 --n-best 5");
    SKIP_WITHOUT_SERVE(server);
    INFO(server.log());
    REQUIRE(server.port > 0);
    const auto sources = attnmt::read_lines((fixture / "src.txt").string());
    const auto expected = attnmt::read_lines((fixture / "expected.jsonl").string());
    REQUIRE(sources.size() == expected.size());
    const std::vector<std::string> lines(sources.begin(), sources.begin() + 12);
    const auto got = post(server.port, "/v1/translate", json{{"text", lines}}.dump());
    REQUIRE(got.status == 200);
    REQUIRE(got.body["translations"].size() == lines.size());
    size_t same = 0, total = 0;
    double worst = 0;
    for (size_t i = 0; i < lines.size(); ++i) {
      const auto want = json::parse(expected[i])["beam5"];
      const auto& hyps = got.body["translations"][i];
      INFO("line " << i << ": " << hyps.dump().substr(0, 1000));
      CHECK(hyps.size() == want.size());
      for (size_t k = 0; k < want.size() && k < hyps.size(); ++k) {
        std::string text;
        for (const auto& token : want[k]["tokens"]) text += (text.empty() ? "" : " ") + token.get<std::string>();
        ++total;
        CHECK(hyps[k]["text"] == text);
        if (hyps[k]["text"] != text) continue;
        ++same;
        const double score = want[k]["score"].get<double>();
        worst = std::max(worst, std::abs(hyps[k]["score"].get<double>() - score) - (marian ? 5e-6 * std::abs(score) : 0.0));
      }
    }
    WARN(name << " served: " << same << "/" << total << " hypotheses equal the toolkit's; largest score difference "
              << "beyond its printing " << worst);
    CHECK(worst < 1e-4);
    server.signal("TERM");
    CHECK(server.wait() == 0);
    fs::remove_all(dir);
  }
#endif
}

#ifdef ATTNMT_TEST_HTTP
namespace {

Reply request(int port, const std::string& method, const std::string& path, const std::string& body,
              const httplib::Headers& headers) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  httplib::Result r = method == "GET"       ? client.Get(path.c_str(), headers)
                      : method == "OPTIONS" ? client.Options(path.c_str(), headers)
                                            : client.Post(path.c_str(), headers, body, "application/json");
  Reply reply = reply_of(r);
  if (r) {
    for (const auto& [k, v] : r->headers) reply.text += "\n" + k + ": " + v;  // headers after the body
  }
  return reply;
}

// The number after `name ` in a /metrics text; -1 when absent.
long metric(const std::string& text, const std::string& name) {
  const auto at = text.find("\n" + name + " ");
  return at == std::string::npos ? -1 : std::stol(text.substr(at + name.size() + 2));
}

// Sends `bytes` on a fresh connection and closes it without reading (a client that goes away).
void send_and_leave(int port, const std::string& bytes, int linger_ms) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::send(fd, bytes.data(), bytes.size(), 0) == static_cast<ssize_t>(bytes.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(linger_ms));
  ::close(fd);
}

std::string raw_post(const std::string& path, const std::string& body) {
  return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace
#endif

TEST_CASE("serve: the client's mistakes are 4xx, never 500 or a crash (not UTF-8, odd paths, huge numbers)",
          "[serve][e2e]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_client_mistakes");
  const auto model = tiny_model(dir);
  Server server(dir, "--model tiny=" + model.string());
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  struct Bad {
    std::string path, body;
    int status;
    std::string message;
  };
  const std::vector<Bad> bad = {
      {"/v1/translate", "{\"text\": [\"ein \xff Mann\"]}", 400, "the body is not UTF-8: byte 15 (0xFF)"},
      {"/v1/translate", "{\"text\": [\"a\"], \"model\": \"\xc3\"}", 400, "not UTF-8"},
      {"/v1/translate", "{\"text\": [\"a\"], \"\xe2\x82\": 1}", 400, "not UTF-8"},
      {"/translator/translate", "[{\"src\": \"\xed\xa0\x80\"}]", 400, "not UTF-8"},  // a UTF-16 surrogate
      {"/v1/translate", "{\"text\": [\"a\"], \"beam_size\": 1e400}", 400, "invalid JSON"},
      {"/v1/translate", "{\"text\": [\"a\"], \"beam_size\": 18446744073709551615}", 400, "beam_size: expected"},
      {"/v1/translate", "{\"text\": [\"a\"], \"beam_size\": 2.5}", 400, "beam_size: expected"},
      {"/translator/translate", "[{\"src\": \"a\", \"id\": 18446744073709551615}]", 404, "unknown model"},
      {"/translator/translate", "[{\"src\": \"a\", \"id\": -1}]", 404, "unknown model -1"},
      {"/v1/translate", std::string(100000, '['), 400, "invalid JSON"},
      {"/v1/x%ff", "{}", 404, "no endpoint POST /v1/x"},  // the decoded path is not UTF-8
  };
  for (const auto& b : bad) {
    INFO(b.path << " " << b.body.substr(0, 80));
    const auto r = post(port, b.path, b.body);
    CHECK(r.status == b.status);
    CHECK(!r.body.is_discarded());  // JSON, whatever the bytes asked about
    CHECK_THAT(r.body.value("error", std::string()), Contains(b.message));
  }
  CHECK(get(port, "/health").status == 200);  // still there
  const auto metrics = get(port, "/metrics").text;
  CHECK(metrics.find("status=\"5") == std::string::npos);
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: --api-key on every endpoint but /health and the page, --cors only for the origin named",
          "[serve][e2e]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_access");
  const auto model = tiny_model(dir);
  write(dir / "key.txt", "  s3cret-key  \n");
  Server server(dir, "--model tiny=" + model.string() + " --api-key-file " + (dir / "key.txt").string() +
                         " --cors https://app.example");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  const std::string body = json{{"text", {"ein Mann"}}}.dump();
  const httplib::Headers key = {{"Authorization", "Bearer s3cret-key"}};
  CHECK(request(port, "POST", "/v1/translate", body, key).status == 200);
  CHECK(request(port, "POST", "/translator/translate", "[{\"src\": \"ein Mann\"}]", key).status == 200);
  for (const auto& [method, path] : std::vector<std::pair<std::string, std::string>>{
           {"POST", "/v1/translate"}, {"POST", "/translator/translate"}, {"GET", "/v1/models"},
           {"GET", "/metrics"}, {"POST", "/v1/nothing"}}) {
    INFO(method << " " << path);
    for (const auto& h : std::vector<httplib::Headers>{{},
                                                        {{"Authorization", "Bearer s3cret-ke"}},
                                                        {{"Authorization", "Bearer s3cret-key2"}},
                                                        {{"Authorization", "s3cret-key"}},
                                                        {{"Authorization", "Basic s3cret-key"}}}) {
      const auto r = request(port, method, path, "{}", h);
      CHECK(r.status == 401);
      CHECK_THAT(r.body.value("error", std::string()), Contains("API key"));
      CHECK_THAT(r.text, Contains("WWW-Authenticate: Bearer"));
    }
  }
  CHECK(request(port, "GET", "/health", "", {}).status == 200);
  CHECK(request(port, "GET", "/v1/models", "", key).status == 200);
  CHECK_THAT(request(port, "GET", "/metrics", "", key).text, Contains("endpoint=\"unauthorized\",status=\"401\""));
  // CORS: the origin named gets the headers, and its preflight (which carries no key) a 204
  auto r = request(port, "POST", "/v1/translate", body, {{"Authorization", "Bearer s3cret-key"}, {"Origin", "https://app.example"}});
  CHECK(r.status == 200);
  CHECK_THAT(r.text, Contains("Access-Control-Allow-Origin: https://app.example"));
  r = request(port, "OPTIONS", "/v1/translate", "", {{"Origin", "https://app.example"},
                                                      {"Access-Control-Request-Method", "POST"}});
  CHECK(r.status == 204);
  CHECK_THAT(r.text, Contains("Access-Control-Allow-Headers: Authorization, Content-Type"));
  r = request(port, "POST", "/v1/translate", body, {{"Authorization", "Bearer s3cret-key"}, {"Origin", "https://evil.example"}});
  CHECK(r.status == 200);
  CHECK(r.text.find("Access-Control-Allow-Origin") == std::string::npos);
  CHECK(request(port, "OPTIONS", "/v1/translate", "", {{"Origin", "https://evil.example"}}).status != 204);
  server.signal("TERM");
  CHECK(server.wait() == 0);

  // No --cors: no CORS header for anyone; no key on a non-loopback address: a warning at start;
  // a key that cannot travel in a header: refused at start.
  fs::create_directories(dir / "open");
  Server open(dir / "open", "--model " + model.string() + " --host 0.0.0.0");
  INFO(open.log());
  REQUIRE(open.port > 0);
  CHECK_THAT(open.log(), Contains("on http://0.0.0.0:") && Contains("not a loopback address, and no --api-key is set"));
  const int open_port = open.port;
  r = request(open_port, "POST", "/v1/translate", body, {{"Origin", "https://app.example"}});
  CHECK(r.status == 200);
  CHECK(r.text.find("Access-Control") == std::string::npos);
  open.signal("TERM");
  CHECK(open.wait() == 0);
  auto refused = run("serve --model " + model.string() + " --port 0 --api-key 'two words'");
  CHECK(refused.status == 2);
  CHECK_THAT(refused.output, Contains("--api-key: spaces and control characters"));
  CHECK(run("serve --model " + model.string() + " --port 0 --api-key-file " + (dir / "none").string()).status == 2);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: a sentence that fails to decode fails its own request only, the rest of its batch is answered",
          "[serve][e2e][faults]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  // Under either batching: a running search starts its joining sentences again one at a time.
  const std::string batching = GENERATE(as<std::string>{}, "static", "continuous");
  INFO("--batching " << batching);
  auto dir = temp_dir("serve_decode_fault_" + batching);
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  auto expected = run("translate --model " + model.string() + " --input " + kData + "/tiny.de --beam-size 3 --output " +
                      (dir / "want.txt").string());
  REQUIRE(expected.status == 0);
  const auto want = attnmt::read_lines((dir / "want.txt").string());
  // One worker that waits up to 2 s to fill a batch of 16: the six requests below go in one batch.
  // The engine with the tests' hooks: ATTNMT_TEST_FAIL_SENTENCE (tests/hooks/fail_sentence.cpp).
  Server server(dir, "--model tiny=" + model.string() + " --beam-size 3 --workers 1 --max-wait-ms 2000 "
                         "--max-batch-sentences 16 --batching " + batching,
                "ATTNMT_TEST_FAIL_SENTENCE=BOOM", ATTNMT_TEST_HOOKS_ENGINE_BINARY);
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  // A batch of 16 long sentences in flight first, so that the six requests arrive while the worker
  // is busy: the batcher then waits for more (it does not for a lone client) and puts all six in
  // one batch.
  std::string long_line;
  while (long_line.size() < 2000) long_line += lines[0] + " ";
  auto first = std::async(std::launch::async, [&] {
    return post(port, "/v1/translate", json{{"text", std::vector<std::string>(16, long_line)}}.dump());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::vector<std::future<Reply>> replies;
  for (size_t i = 1; i <= 6; ++i) {
    replies.push_back(std::async(std::launch::async, [&, i] {
      const std::vector<std::string> text = i == 3 ? std::vector<std::string>{lines[i], "BOOM"}
                                                   : std::vector<std::string>{lines[i]};
      return post(port, "/v1/translate", json{{"text", text}}.dump());
    }));
  }
  CHECK(first.get().status == 200);
  for (size_t k = 0; k < replies.size(); ++k) {
    const size_t i = k + 1;
    const auto r = replies[k].get();
    INFO("request " << i << ": " << r.text);
    if (i == 3) {
      CHECK(r.status == 500);
      CHECK_THAT(r.body.value("error", std::string()), Contains("translation failed: decoding failed"));
    } else {
      REQUIRE(r.status == 200);
      CHECK(r.body["translations"][0][0]["text"] == want[i]);
    }
  }
  const auto metrics = get(port, "/metrics").text;
  INFO(metrics);
  CHECK(metric(metrics, "attnmt_sentences_total") == 16 + 6);  // every sentence but BOOM
  // The failing sentence shared its batch with other requests' sentences (its request has two), or
  // the test proves nothing: "a batch of N sentences failed (...): decoding them one at a time".
  const auto log = server.log();
  const auto at = log.find("] a batch of ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stoi(log.substr(at + 13)) >= 3);
  CHECK_THAT(log, Contains("decoding them one at a time"));
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: a client that goes away has its queued sentences dropped, counted in /metrics",
          "[serve][e2e][faults]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_client_leaves");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  // One sentence per batch on one worker: 200 long sentences take seconds to decode.
  Server server(dir, "--model tiny=" + model.string() + " --workers 1 --max-batch-sentences 1 --beam-size 5 "
                         "--max-request-sentences 200");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  std::string long_line;
  while (long_line.size() < 1500) long_line += lines[0] + " ";
  send_and_leave(port, raw_post("/v1/translate", json{{"text", std::vector<std::string>(200, long_line)}}.dump()),
                 /*linger_ms=*/300);
  // within a second or so the server sees the closed connection and drops what is queued
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    metrics = get(port, "/metrics").text;
    if (metric(metrics, "attnmt_requests_abandoned_total") == 1 && metric(metrics, "attnmt_queue_sentences") == 0) break;
  }
  INFO(metrics);
  CHECK(metric(metrics, "attnmt_requests_abandoned_total") == 1);
  const long dropped = metric(metrics, "attnmt_sentences_dropped_total");
  CHECK(dropped > 100);
  // and they were not decoded: what was translated and what was dropped add up to at most 200
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  metrics = get(port, "/metrics").text;
  CHECK(metric(metrics, "attnmt_sentences_total") + dropped <= 200);
  CHECK(metric(metrics, "attnmt_sentences_total") < 100);
  CHECK(post(port, "/v1/translate", json{{"text", {lines[1]}}}.dump()).status == 200);  // and it serves on
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: SIGTERM under full load answers every request it accepted", "[serve][e2e][faults]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_term_load");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  Server server(dir, "--model tiny=" + model.string() + " --max-wait-ms 20 --max-queue 4096");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  // 32 clients, each sending requests of 1-8 sentences one after another until the server is gone
  std::atomic<long> answered{0}, ok{0}, stopping{0}, other{0};
  std::atomic<bool> signalled{false};
  std::vector<std::thread> clients;
  for (int c = 0; c < 32; ++c) {
    clients.emplace_back([&, c] {
      for (int n = 0;; ++n) {
        std::vector<std::string> text;
        for (int k = 0; k <= (c + n) % 8; ++k) text.push_back(lines[static_cast<size_t>(c + n + k) % lines.size()]);
        const auto r = post(port, "/v1/translate", json{{"text", text}}.dump());
        if (r.status == 0) {
          if (signalled) return;  // refused or closed: the server stopped listening
          continue;
        }
        ++answered;
        if (r.status == 200) {
          ++ok;
        } else if (r.status == 503) {
          ++stopping;
        } else {
          ++other;
        }
      }
    });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  signalled = true;
  server.signal("TERM");
  for (auto& t : clients) t.join();
  CHECK(server.wait() == 0);
  const auto log = server.log();
  INFO(log);
  const auto at = log.find("stopped: ");
  REQUIRE(at != std::string::npos);
  long accepted = -1, counted = -1;
  REQUIRE(std::sscanf(log.c_str() + at, "stopped: %ld request(s) accepted, %ld answered", &accepted, &counted) == 2);
  CHECK(accepted == counted);
  CHECK(counted == answered.load());  // every answer the server counted reached its client
  CHECK(ok > 32);                     // it was under load when the signal came
  CHECK(other == 0);
  fs::remove_all(dir);
#endif
}

#ifdef ATTNMT_TEST_HTTP
namespace {

using Clock = std::chrono::steady_clock;

// An answer of POST /v1/translate with "stream": true, read as a browser's EventSource would: the
// HTTP status and content type, and the server-sent events in order (name, data as sent).
struct Events {
  int status = 0;
  std::string content_type, body;  // body: the whole (de-chunked) answer
  std::vector<std::pair<std::string, std::string>> events;
  size_t words() const {
    return static_cast<size_t>(std::count_if(events.begin(), events.end(), [](const auto& e) { return e.first == "word"; }));
  }
  std::string text() const {  // the word events' texts, concatenated
    std::string out;
    for (const auto& [name, data] : events) {
      if (name == "word") out += json::parse(data)["text"].get<std::string>();
    }
    return out;
  }
};

// The complete events ("event: NAME\ndata: DATA\n\n") at the front of `body`, taken off it.
void take_events(std::string& body, std::vector<std::pair<std::string, std::string>>& events) {
  for (size_t end; (end = body.find("\n\n")) != std::string::npos;) {
    std::string name = "message", data;
    size_t at = 0;
    while (at < end) {
      const size_t eol = std::min(body.find('\n', at), end);
      const std::string line = body.substr(at, eol - at);
      if (line.rfind("event: ", 0) == 0) name = line.substr(7);
      if (line.rfind("data: ", 0) == 0) data += line.substr(6);
      at = eol + 1;
    }
    events.emplace_back(name, data);
    body.erase(0, end + 2);
  }
}

// POSTs `body` to /v1/translate on a raw socket and reads the answer as it comes (HTTP/1.1,
// chunked or with a length). With leave_after_words > 0 it closes the connection once that many
// word events have come, as a user who closes the page does.
Events stream_post(int port, const std::string& body, size_t leave_after_words = 0) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  const std::string request = raw_post("/v1/translate", body);
  REQUIRE(::send(fd, request.data(), request.size(), 0) == static_cast<ssize_t>(request.size()));
  Events out;
  std::string raw, pending;  // raw: bytes not yet parsed; pending: de-chunked bytes not yet events
  bool headers = false, chunked = false, ended = false;
  size_t length = 0;
  char buffer[4096];
  while (!ended) {
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    raw.append(buffer, static_cast<size_t>(n));
    if (!headers) {
      const auto end = raw.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      std::string head = raw.substr(0, end);
      raw.erase(0, end + 4);
      headers = true;
      out.status = std::stoi(head.substr(head.find(' ') + 1));
      std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
      chunked = head.find("transfer-encoding: chunked") != std::string::npos;
      const auto type = head.find("content-type: ");
      if (type != std::string::npos) out.content_type = head.substr(type + 14, head.find("\r\n", type) - type - 14);
      const auto len = head.find("content-length: ");
      if (len != std::string::npos) length = std::stoul(head.substr(len + 16));
    }
    if (!chunked) {
      if (raw.size() >= length) {
        out.body = raw.substr(0, length);
        ended = true;
      }
      continue;
    }
    for (size_t eol; (eol = raw.find("\r\n")) != std::string::npos;) {  // whole chunks only
      const size_t size = std::stoul(raw.substr(0, eol), nullptr, 16);
      if (raw.size() < eol + 2 + size + 2) break;
      out.body += raw.substr(eol + 2, size);
      pending += raw.substr(eol + 2, size);
      raw.erase(0, eol + 2 + size + 2);
      if (size == 0) ended = true;
    }
    take_events(pending, out.events);
    if (leave_after_words > 0 && out.words() >= leave_after_words) break;
  }
  ::close(fd);
  return out;
}

// The number in a /metrics line that begins with `prefix` (labels included); -1 when absent.
long metric_line(const std::string& text, const std::string& prefix) {
  const auto at = text.find("\n" + prefix);
  return at == std::string::npos ? -1 : std::stol(text.substr(text.find(' ', at + prefix.size()) + 1));
}

}  // namespace
#endif

TEST_CASE("serve: stream: the words, as they are decided, concatenate to the answer not streamed, byte for byte",
          "[serve][e2e][stream]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_stream");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  Server server(dir, "--model tiny=" + model.string() + " --beam-size 5");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  size_t words = 0, sentences = 0;
  for (const json& options : {json{{"beam_size", 1}}, json{{"beam_size", 5}},
                              json{{"beam_size", 4}, {"n_best", 3}, {"attention", true}}}) {
    for (size_t i = 0; i < 8; ++i) {
      json body = options;
      body["text"] = {lines[i]};
      const auto plain = post(port, "/v1/translate", body.dump());
      REQUIRE(plain.status == 200);
      body["stream"] = true;
      const auto streamed = stream_post(port, body.dump());
      INFO(options.dump() << " line " << i << ": " << streamed.body);
      REQUIRE(streamed.status == 200);
      CHECK(streamed.content_type == "text/event-stream");
      REQUIRE(streamed.events.size() >= 2);
      for (size_t e = 0; e + 1 < streamed.events.size(); ++e) CHECK(streamed.events[e].first == "word");
      CHECK(streamed.events.back().first == "done");
      CHECK(streamed.events.back().second == plain.text);  // the answer not streamed, byte for byte
      const std::string text = plain.body["translations"][0][0]["text"];
      CHECK(streamed.text() == text);
      if (options["beam_size"] == 1) {  // greedy: one event per word, each as soon as it is complete
        const auto spaces = static_cast<size_t>(std::count(text.begin(), text.end(), ' '));
        CHECK(streamed.words() == (text.empty() ? 0 : spaces + 1));
      }
      words += streamed.words();
      ++sentences;
    }
  }
  CHECK(words > 2 * sentences);  // the words came one or a few at a time, not all at the end
  // A stream is counted once its connection's thread is done with it, just after its last event.
  std::string metrics;
  for (int i = 0; i < 50; ++i) {
    metrics = get(port, "/metrics").text;
    if (metric_line(metrics, "attnmt_requests_total{endpoint=\"/v1/translate\",status=\"200\"}") ==
        static_cast<long>(2 * sentences)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO(metrics);
  CHECK(metric(metrics, "attnmt_streams_decoding") == 0);
  CHECK(metric(metrics, "attnmt_streams_stopped_total") == 0);
  CHECK(metric_line(metrics, "attnmt_requests_total{endpoint=\"/v1/translate\",status=\"200\"}") ==
        static_cast<long>(2 * sentences));

  // What cannot be streamed is refused before anything is decoded, with a message.
  const auto two = post(port, "/v1/translate", json{{"text", {lines[0], lines[1]}}, {"stream", true}}.dump());
  CHECK(two.status == 400);
  CHECK_THAT(two.body.value("error", std::string()), Contains("exactly one sentence"));
  const auto not_bool = post(port, "/v1/translate", json{{"text", {lines[0]}}, {"stream", "yes"}}.dump());
  CHECK(not_bool.status == 400);
  CHECK_THAT(not_bool.body.value("error", std::string()), Contains("stream: expected true or false"));
  // A blank sentence has no words: its stream is the done event alone, as its answer not streamed.
  const auto blank = stream_post(port, json{{"text", {" "}}, {"stream", true}}.dump());
  REQUIRE(blank.events.size() == 1);
  CHECK(blank.events[0].second == post(port, "/v1/translate", json{{"text", {" "}}}.dump()).text);
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: stream: a client that goes away stops its sentence's search and frees its worker",
          "[serve][e2e][stream][faults]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_stream_leaves");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  // One worker; every search step of a streamed sentence sleeps 250 ms (the tests' hook,
  // tests/hooks/slow_stream.cpp), so a long sentence streams for seconds whatever the machine.
  constexpr int kStepMs = 250;
  Server server(dir, "--model tiny=" + model.string() + " --workers 1 --beam-size 2",
                "ATTNMT_TEST_STREAM_STEP_MS=" + std::to_string(kStepMs), ATTNMT_TEST_HOOKS_ENGINE_BINARY);
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  std::string long_line;
  while (long_line.size() < 300) long_line += lines[0] + " ";
  // Not streamed (no hook then), its length in steps says how long the stream would last.
  const auto plain = post(port, "/v1/translate", json{{"text", {long_line}}}.dump());
  REQUIRE(plain.status == 200);
  const long steps = plain.body["translations"][0][0]["tokens"].get<long>();
  INFO("steps: " << steps);
  REQUIRE(steps >= 8);  // else the stream would end too soon to leave it: >= 2 s of steps
  const auto before = get(port, "/metrics").text;

  const auto streamed = stream_post(port, json{{"text", {long_line}}, {"stream", true}}.dump(), /*leave_after_words=*/1);
  const auto left = Clock::now();
  REQUIRE(streamed.status == 200);
  REQUIRE(streamed.words() >= 1);
  // The next step sees the client gone (the write fails, or the socket reads closed): the
  // sentence leaves its batch, and the worker takes the next request.
  std::string metrics;
  for (int i = 0; i < 100; ++i) {
    metrics = get(port, "/metrics").text;
    if (metric(metrics, "attnmt_streams_stopped_total") == 1) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  INFO(metrics);
  CHECK(metric(metrics, "attnmt_streams_stopped_total") == 1);
  CHECK(metric(metrics, "attnmt_streams_decoding") == 0);
  const auto answer = post(port, "/v1/translate", json{{"text", {lines[1]}}}.dump());  // the one worker's
  const double seconds = std::chrono::duration<double>(Clock::now() - left).count();
  CHECK(answer.status == 200);
  CHECK(seconds < 0.5 * static_cast<double>(steps * kStepMs) / 1000.0);  // well before the stream would have ended
  // It was not translated: the sentence count grew by the last request's only.
  CHECK(metric(metrics, "attnmt_sentences_total") == metric(before, "attnmt_sentences_total"));
  CHECK(metric(get(port, "/metrics").text, "attnmt_requests_abandoned_total") == 1);
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: continuous batching: a sentence that arrives while a long one decodes joins it and is answered first",
          "[serve][e2e][continuous]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_continuous");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  // One worker; each search step of the streamed sentence sleeps 100 ms (the tests' hook), and
  // decode.min_length 30 keeps the long sentence going for 30 steps or more, while the short one
  // (two words) is cut at its maximum length (floor(1.5 x its 3 source subwords) + 5): so the long
  // one decodes for seconds whatever the machine. With continuous batching the short sentence
  // joins its running search at the next step and leaves when done; with static batching it waits
  // for the long one's whole batch.
  constexpr int kStepMs = 100;
  for (const std::string batching : {"continuous", "static"}) {
    SECTION(batching) {
      Server server(dir, "--model tiny=" + model.string() + " --workers 1 --beam-size 2 --set decode.min_length=30 --batching " + batching,
                    "ATTNMT_TEST_STREAM_STEP_MS=" + std::to_string(kStepMs), ATTNMT_TEST_HOOKS_ENGINE_BINARY);
      SKIP_WITHOUT_SERVE(server);
      INFO(server.log());
      REQUIRE(server.port > 0);
      const int port = server.port;
      const std::string long_line = lines[0] + " " + lines[1] + " " + lines[2];
      const std::string short_line = "Zwei Männer";
      // Alone first (not streamed: no hook), for their answers and lengths in steps.
      const auto long_alone = post(port, "/v1/translate", json{{"text", {long_line}}}.dump());
      const auto short_alone = post(port, "/v1/translate", json{{"text", {short_line}}}.dump());
      REQUIRE(long_alone.status == 200);
      REQUIRE(short_alone.status == 200);
      const long long_steps = long_alone.body["translations"][0][0]["tokens"].get<long>();
      const long short_steps = short_alone.body["translations"][0][0]["tokens"].get<long>();
      INFO("steps: " << long_steps << " and " << short_steps);
      REQUIRE(long_steps >= short_steps + 15);  // the short one joins ~3 steps in and has 12 to spare

      const auto start = Clock::now();
      auto streamed = std::async(std::launch::async, [&] {
        auto events = stream_post(port, json{{"text", {long_line}}, {"stream", true}}.dump());
        return std::make_pair(events, std::chrono::duration<double>(Clock::now() - start).count());
      });
      std::this_thread::sleep_for(std::chrono::milliseconds(3 * kStepMs));
      const auto joined = post(port, "/v1/translate", json{{"text", {short_line}}}.dump());
      const double joined_at = std::chrono::duration<double>(Clock::now() - start).count();
      const auto [events, streamed_at] = streamed.get();
      REQUIRE(joined.status == 200);
      REQUIRE(events.status == 200);
      // Each answer as it was alone.
      CHECK(joined.body["translations"] == short_alone.body["translations"]);
      CHECK(json::parse(events.events.back().second)["translations"] == long_alone.body["translations"]);
      INFO("short answered at " << joined_at << " s, long at " << streamed_at << " s");
      const double long_decode = static_cast<double>(long_steps * kStepMs) / 1000.0;  // its steps' sleeps alone
      if (batching == "continuous") {
        CHECK(joined_at < streamed_at);
        CHECK(joined_at < long_decode - 0.6);
        // The two decoded as one running batch.
        const auto metrics = get(port, "/metrics").text;
        CHECK(metric(metrics, "attnmt_batches_total") == 3);  // the two alone, then the two together
        CHECK(metric(metrics, "attnmt_streams_decoding") == 0);  // the stream counted in and out once
        CHECK(metric(metrics, "attnmt_sentences_total") == 4);
      } else {
        CHECK(joined_at > long_decode - 0.15);  // it waited for the long one's whole batch
      }
      server.signal("TERM");
      CHECK(server.wait() == 0);
    }
  }
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: /v1/alternatives: the k best next subwords, each completion as translate --prefix writes it",
          "[serve][e2e][alternatives]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_alternatives");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  Server server(dir, "--model tiny=" + model.string() + " --beam-size 4");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  const std::string source = lines[2];
  const std::string own = post(port, "/v1/translate", json{{"text", {source}}}.dump()).body["translations"][0][0]["text"];
  const std::string prefix = own.substr(0, own.find(' '));  // its first word
  const auto r = post(port, "/v1/alternatives", json{{"text", source}, {"prefix", prefix}, {"k", 6}}.dump());
  INFO(r.text);
  REQUIRE(r.status == 200);
  const auto& alternatives = r.body["alternatives"];
  REQUIRE(alternatives.size() == 6);
  double last = 0;
  for (const auto& a : alternatives) {  // most probable first, probabilities of a distribution
    CHECK(a["log_prob"].get<double>() <= last);
    CHECK(a["prob"].get<double>() == Approx(std::exp(a["log_prob"].get<double>())));
    last = a["log_prob"];
  }
  // `translate --prefix`, one line per alternative: the prefix and the alternative's subword as
  // text ("▁" a space), with the same beam.
  std::string inputs, prefixes;
  std::vector<std::string> expected;
  for (const auto& a : alternatives) {
    std::string piece = a["piece"];
    if (piece == "</s>") continue;
    for (size_t at; (at = piece.find("\u2581")) != std::string::npos;) piece.replace(at, 3, " ");
    inputs += source + "\n";
    prefixes += prefix + piece + "\n";
    expected.push_back(a["translation"]["text"]);
  }
  write(dir / "in.txt", inputs);
  write(dir / "prefix.txt", prefixes);
  auto t = run("translate --model " + model.string() + " --beam-size 4 --input " + (dir / "in.txt").string() +
               " --prefix " + (dir / "prefix.txt").string() + " --output " + (dir / "out.txt").string());
  INFO(t.output);
  REQUIRE(t.status == 0);
  const auto written = attnmt::read_lines((dir / "out.txt").string());
  REQUIRE(written.size() == expected.size());
  size_t same = 0;
  for (size_t i = 0; i < expected.size(); ++i) same += written[i] == expected[i] ? 1 : 0;
  // Equal wherever the prefix's text is cut into the same subwords again (translate cuts the
  // text; the server forces the subword itself): nearly always on this model.
  CHECK(same + 1 >= expected.size());

  // Bad requests: 4xx with a message.
  auto refused = [&](const json& body, int status, const std::string& says) {
    const auto bad = post(port, "/v1/alternatives", body.dump());
    INFO(body.dump() << " -> " << bad.text);
    CHECK(bad.status == status);
    CHECK_THAT(bad.body.value("error", std::string()), Contains(says));
  };
  refused({{"text", source}, {"k", 0}}, 400, "k: expected an integer from 1 to 32");
  refused({{"text", source}, {"k", 100000}}, 400, "k: expected an integer from 1 to 32");
  refused({{"text", source}, {"prefix", 7}}, 400, "prefix: expected a string");
  refused({{"prefix", "A"}}, 400, "text: expected a string");
  refused({{"text", source}, {"prefix", std::string(5000, 'a')}}, 413, "prefix has 5000 bytes");
  std::string many;
  while (many.size() < 600) many += "a b ";
  refused({{"text", source}, {"prefix", many}}, 400, "no room for a next one");
  refused({{"text", " "}}, 400, "the source is blank");
  refused({{"text", source}, {"n", 3}}, 400, "unknown field 'n'");
  for (const json& beta : {json(-0.1), json(1), json(1.5), json("0.5"), json(true), json(nullptr)}) {
    refused({{"text", source}, {"prefix_bias_beta", beta}}, 400, "prefix_bias_beta: expected a number in [0, 1)");
  }

  // prefix_bias_beta: the same k subwords and probabilities (the model's own after the prefix); the
  // completions are searched with a bias towards prefix + subword instead of forcing them (the
  // biased search itself is checked by hand in the core tests). Under a bias that nearly forces,
  // every completion still begins with the prefix.
  const auto forced = post(port, "/v1/alternatives", json{{"text", source}, {"prefix", prefix}, {"k", 6}}.dump());
  const auto nearly = post(port, "/v1/alternatives",
                           json{{"text", source}, {"prefix", prefix}, {"k", 6}, {"prefix_bias_beta", 0.999999}}.dump());
  REQUIRE(nearly.status == 200);
  CHECK(nearly.body["prefix_bias_beta"] == 0.999999);
  CHECK(forced.body["prefix_bias_beta"] == 0.0);
  for (size_t j = 0; j < 6; ++j) {
    INFO("alternative " << j);
    CHECK(nearly.body["alternatives"][j]["piece"] == forced.body["alternatives"][j]["piece"]);
    CHECK(nearly.body["alternatives"][j]["log_prob"] == forced.body["alternatives"][j]["log_prob"]);
    CHECK(nearly.body["alternatives"][j]["translation"]["text"].get<std::string>().rfind(prefix, 0) == 0);
  }
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}

TEST_CASE("serve: SimulEval's remote protocol (reset, input, output) writes translate --streaming's words "
          "with its --simuleval-dir delays",
          "[serve][e2e][simuleval]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY("SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): serve was not tested");
  return;
#else
  auto dir = temp_dir("serve_simuleval");
  const auto model = tiny_model(dir);
  const auto lines = attnmt::read_lines(kData + "/tiny.de");
  const std::string ref = kData + "/tiny.en";
  // translate --streaming's words and its SimulEval log (a word delayed by the source words sent
  // when it was known complete).
  auto streamed = run("translate --model " + model.string() + " --input " + kData + "/tiny.de --streaming --wait-k 2" +
                      " --output " + (dir / "streamed.en").string() + " --reference " + ref + " --simuleval-dir " +
                      (dir / "offline").string());
  INFO(streamed.output);
  REQUIRE(streamed.status == 0);
  const auto want = attnmt::read_lines((dir / "streamed.en").string());
  const auto offline = attnmt::read_lines((dir / "offline" / "instances.log").string());
  REQUIRE(offline.size() == lines.size());

  Server server(dir, "--model tiny=" + model.string() + " --set decode.wait_k=2");
  SKIP_WITHOUT_SERVE(server);
  INFO(server.log());
  REQUIRE(server.port > 0);
  const int port = server.port;
  CHECK(server.log().find("SimulEval's remote protocol (POST /reset, PUT /input, GET /output): model 'tiny', "
                          "policy wait-2 (replay)") != std::string::npos);
  // What simuleval/data/segments.py's Segment.json() sends (json.dumps of the dataclass).
  auto segment = [](const json& content, bool finished, bool empty) {
    return json{{"index", 0},          {"content", content},   {"finished", finished}, {"is_empty", empty},
                {"data_type", empty ? json() : json("text")}, {"tgt_lang", nullptr}, {"config", json::object()}}
        .dump();
  };
  // Calls out of order, before any sentence.
  CHECK(put(port, "/input", segment("Ein", false, false)).status == 409);
  CHECK(get(port, "/output").status == 409);
  // simuleval/evaluator/remote.py's loop, sentence by sentence: reset; then send a word (an empty
  // finished segment once they are all sent) and take the output, until the output is finished.
  size_t early = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    INFO("line " << i << ": " << lines[i]);
    REQUIRE(post(port, "/reset", "").status == 200);
    std::istringstream in(lines[i]);
    const std::vector<std::string> words{std::istream_iterator<std::string>(in), {}};
    std::vector<std::string> prediction;
    std::vector<int64_t> delays;
    size_t step = 0;
    for (bool finished = false; !finished;) {
      const bool last = step + 1 == words.size();
      const auto sent = put(port, "/input", step < words.size() ? segment(words[step], last, false)
                                                                  : segment(json::array(), true, true));
      REQUIRE(sent.status == 200);
      step = std::min(step + 1, words.size());
      const auto out = get(port, "/output");
      REQUIRE(out.status == 200);
      const auto& o = out.body;
      // Every field of SimulEval's Segment, and no other (it builds its dataclass from them).
      REQUIRE(o.size() == 7);
      for (const char* key : {"index", "content", "finished", "is_empty", "data_type", "tgt_lang", "config"}) {
        REQUIRE(o.contains(key));
      }
      finished = o["finished"].get<bool>();
      if (o["is_empty"].get<bool>()) {
        CHECK(o["data_type"].is_null());
        continue;
      }
      CHECK(o["data_type"] == "text");
      std::istringstream got(o["content"].get<std::string>());
      for (std::string w; got >> w;) {
        prediction.push_back(w);
        delays.push_back(static_cast<int64_t>(step));
      }
    }
    // The words translate --streaming writes, each delayed as its --simuleval-dir says.
    std::istringstream w(want[i]);
    CHECK(prediction == std::vector<std::string>{std::istream_iterator<std::string>(w), {}});
    const auto record = attnmt::parse_simuleval_line(offline[i], "instances.log");
    CHECK(delays == record.delays);
    for (auto d : delays) early += d < static_cast<int64_t>(words.size());
    // Once finished, an empty finished segment; more source is refused until the next reset.
    const auto after = get(port, "/output");
    CHECK(after.body["finished"] == true);
    CHECK(after.body["is_empty"] == true);
    const auto more = put(port, "/input", segment("noch", false, false));
    CHECK(more.status == 409);
    CHECK(more.body["error"].get<std::string>().find("POST /reset") != std::string::npos);
  }
  CHECK(early > 0);  // words did go out before their sentence's source was all sent
  // Bad segments: 4xx naming the field.
  REQUIRE(post(port, "/reset", "").status == 200);
  for (const auto& [body, status, says] : std::vector<std::tuple<std::string, int, std::string>>{
           {"[1]", 400, "a JSON object"},
           {"{\"content\": [0.1], \"data_type\": \"speech\"}", 400, "data_type"},
           {"{\"content\": 5, \"data_type\": \"text\"}", 400, "content"},
           {"{\"content\": \"a\", \"data_type\": \"text\", \"finished\": 1}", 400, "finished"},
           {"{\"content\": \"a\", \"data_type\": \"text\", \"sample_rate\": 16000}", 400, "sample_rate"},
           {"{\"content\": \"a\", ", 400, "JSON"},
           {"{\"content\": \"" + std::string(5000, 'a') + "\", \"data_type\": \"text\"}", 413, "content"}}) {
    INFO(body.substr(0, 80));
    const auto r = put(port, "/input", body);
    CHECK(r.status == status);
    CHECK(r.body["error"].get<std::string>().find(says) != std::string::npos);
  }
  server.signal("TERM");
  CHECK(server.wait() == 0);
  // A model whose attention does not stop hard, without a wait-k: the protocol says why.
  Server plain(dir, "--model tiny=" + model.string());
  REQUIRE(plain.port > 0);
  const auto refused = post(plain.port, "/reset", "");
  CHECK(refused.status == 400);
  CHECK(refused.body["error"].get<std::string>().find("decode.wait_k") != std::string::npos);
  plain.signal("TERM");
  CHECK(plain.wait() == 0);
  fs::remove_all(dir);
#endif
}
