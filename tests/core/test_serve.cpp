// attnmt serve through the real program on a tiny model: both API shapes, dynamic batching gives
// `attnmt translate`'s translations, every error status, metrics, and a graceful stop with a
// request in flight. Skipped with a message where cpp-httplib is missing (the client is its too).
#include <catch2/catch.hpp>

#if __has_include(<httplib.h>)
#include <httplib.h>
#define ATTNMT_TEST_HTTP 1
#endif

#include <chrono>
#include <future>
#include <nlohmann/json.hpp>
#include <thread>

#include "program.h"
#include "util/text_io.h"

using namespace attnmt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;

#ifdef ATTNMT_TEST_HTTP
namespace {

const std::string kData = ATTNMT_TEST_DATA_DIR;

// A server started in the background: its port once it listens, its exit status once it ends.
struct Server {
  fs::path dir;
  int port = 0;
  bool missing = false;  // built without cpp-httplib

  Server(const fs::path& d, const std::string& args) : dir(d) {
    fs::remove(dir / "serve.rc");
    shell("( " + std::string(ATTNMT_BINARY) + " serve --port 0 " + args + " > " + (dir / "serve.log").string() +
          " 2>&1 & pid=$!; echo $pid > " + (dir / "serve.pid").string() + "; wait $pid; echo $? > " +
          (dir / "serve.rc").string() + " ) > /dev/null 2>&1 &");
    for (int i = 0; i < 600 && port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto log = attnmt::read_file((dir / "serve.log").string());
      if (log.find("without cpp-httplib") != std::string::npos) {
        missing = true;
        return;
      }
      const auto at = log.find("on http://127.0.0.1:");
      if (at != std::string::npos) port = std::stoi(log.substr(at + 20));
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

struct Reply {
  int status = 0;
  json body;
  std::string text, retry_after;
};

Reply post(int port, const std::string& path, const std::string& body) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  auto r = client.Post(path.c_str(), body, "application/json");
  Reply reply;
  if (!r) return reply;
  reply.status = r->status;
  reply.text = r->body;
  reply.body = json::parse(r->body, nullptr, false);
  reply.retry_after = r->get_header_value("Retry-After");
  return reply;
}

Reply get(int port, const std::string& path) {
  httplib::Client client("127.0.0.1", port);
  auto r = client.Get(path.c_str());
  Reply reply;
  if (!r) return reply;
  reply.status = r->status;
  reply.text = r->body;
  reply.body = json::parse(r->body, nullptr, false);
  return reply;
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
  if (server.missing) {
    ATTNMT_MISSING_DEPENDENCY("SKIPPED: attnmt was built without cpp-httplib: serve was not tested");
    return;
  }
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

  // SIGTERM with a request waiting in the queue: it is answered, then the server exits 0
  fs::create_directories(dir / "slow");
  Server waiting(dir / "slow", "--model " + model.string() + " --beam-size 3 --max-wait-ms 5000 --max-batch-sentences 64");
  REQUIRE(waiting.port > 0);
  auto in_flight = std::async(std::launch::async, [&] {
    return post(waiting.port, "/v1/translate", json{{"text", {lines[0], lines[1], lines[2]}}}.dump());
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  waiting.signal("TERM");
  const auto answered = in_flight.get();
  CHECK(answered.status == 200);
  REQUIRE(answered.body["translations"].size() == 3);
  CHECK(answered.body["translations"][2][0]["text"] == want[2]);
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
  if (server.missing) {
    ATTNMT_MISSING_DEPENDENCY("SKIPPED: attnmt was built without cpp-httplib: serve was not tested");
    return;
  }
  INFO(server.log());
  REQUIRE(server.port > 0);
  json request = json::array();
  for (size_t i = 0; i < 10; ++i) request.push_back({{"src", lines[i]}, {"id", "onmt"}});
  const auto reply = post(server.port, "/translator/translate", request.dump());
  REQUIRE(reply.status == 200);
  for (size_t i = 0; i < 10; ++i) CHECK(reply.body[0][i]["tgt"] == want[i]);
  server.signal("TERM");
  CHECK(server.wait() == 0);
  fs::remove_all(dir);
#endif
}
