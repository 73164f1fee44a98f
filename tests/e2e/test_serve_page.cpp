// The translation page of `attnmt serve` (GET /) in a real browser: headless Chromium opens a
// shareable link (/?text=...&model=...), whose page fills the box and translates by itself, and
// the test reads the DOM it built: the translation against `attnmt translate`'s, the heatmap's
// cells against the API's attention, the compare view's models and BLEU, the streaming view's
// steps against `translate --streaming --delays`, an injected source that must stay text, and the
// server's errors as messages. Skipped with a message where Chromium or cpp-httplib is missing
// (a failure in CI).
#include <catch2/catch.hpp>

#if __has_include(<httplib.h>)
#include <httplib.h>
#define ATTNMT_TEST_HTTP 1
#endif

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "eval/metrics.h"
#include "program.h"
#include "util/text_io.h"

using namespace attnmt::test;
using Catch::Matchers::Contains;
using json = nlohmann::json;

#ifdef ATTNMT_TEST_HTTP
namespace {


// `attnmt serve --port 0 ARGS` in the background; its port once it listens; killed at the end.
struct PageServer {
  fs::path dir;
  int port = 0;
  PageServer(const fs::path& d, const std::string& args) : dir(d) {
    fs::remove(dir / "serve.log");  // a previous server's, whose port line would be read
    shell("( " + std::string(ATTNMT_BINARY) + " serve --port 0 " + args + " > " + (dir / "serve.log").string() +
          " 2>&1 & echo $! > " + (dir / "serve.pid").string() + " ) > /dev/null 2>&1");
    for (int i = 0; i < 600 && port == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      const auto log = log_text();
      const auto at = log.find("on http://127.0.0.1:");
      if (at != std::string::npos) port = std::stoi(log.substr(at + 20));
    }
    pid = attnmt::read_file((dir / "serve.pid").string());
    pid.erase(pid.find_last_not_of(" \n") + 1);
  }
  std::string log_text() const {
    return fs::exists(dir / "serve.log") ? attnmt::read_file((dir / "serve.log").string()) : "";
  }
  ~PageServer() {
    if (!pid.empty()) shell("kill -KILL " + pid + " 2>/dev/null");
  }
  std::string pid;
};

json post_json(int port, const std::string& path, const json& body, int* status = nullptr) {
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(120, 0);
  auto r = client.Post(path.c_str(), body.dump(), "application/json");
  REQUIRE(r);
  if (status) *status = r->status;
  return json::parse(r->body);
}

std::string url_encode(const std::string& text) {
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof(hex), "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

// `text` with each character that `entities` names written as its entity.
std::string escaped(const std::string& text, std::initializer_list<std::pair<char, const char*>> entities) {
  std::string out;
  for (char c : text) {
    const auto* e = std::find_if(entities.begin(), entities.end(), [c](const auto& entity) { return entity.first == c; });
    if (e != entities.end())
      out += e->second;
    else
      out += c;
  }
  return out;
}

// Text as the DOM serializer writes it inside an element.
std::string as_html_text(const std::string& text) { return escaped(text, {{'&', "&amp;"}, {'<', "&lt;"}, {'>', "&gt;"}}); }

// The text of the first <span class="hyp-text"> after `from`.
std::string hyp_text(const std::string& dom, size_t from = 0) {
  const std::string open = "<span class=\"hyp-text\">";
  const auto at = dom.find(open, from);
  if (at == std::string::npos) return "<none>";
  const auto begin = at + open.size();
  return dom.substr(begin, dom.find("</span>", begin) - begin);
}

// The text of <div id="message">, "" while it is hidden.
std::string message(const std::string& dom) {
  static const std::regex shown(R"re(<div id="message" class="message (\w+)" role="alert">([^<]*)</div>)re");
  std::smatch m;
  return std::regex_search(dom, m, shown) ? m[1].str() + ": " + m[2].str() : "";
}

struct Browser {
  std::string program;
  fs::path profile;
  int port;
  // The DOM once the page has run (virtual time does not advance while a request is pending, so
  // the budget is spent after the page's calls are answered).
  std::string dom(const std::string& query) const {
    return shell(program + " " + flags() + " --virtual-time-budget=30000 --dump-dom \"" + url(query) +
                 "\" 2>/dev/null");
  }
  // The DOM once the page says it is done (<body data-ready="true">), waited for in real time by
  // tests/e2e/page_when_ready.py: for a view whose work goes on after its requests are answered (a
  // streamed answer read as it comes), which the virtual-time budget above would cut short.
  std::string ready_dom(const std::string& query) const {
    const auto driver = fs::path(ATTNMT_TEST_DATA_DIR).parent_path() / "e2e" / "page_when_ready.py";
    return shell("python3 " + driver.string() + " " + program + " " + profile.string() + " \"" + url(query) +
                 "\" 90 2>&1");
  }
  std::string url(const std::string& query) const { return "http://127.0.0.1:" + std::to_string(port) + "/" + query; }
  std::string flags() const {
    return "--headless --no-sandbox --disable-gpu --hide-scrollbars --user-data-dir=" + profile.string();
  }
};

}  // namespace
#endif

TEST_CASE("serve page in a real browser: translation, heatmap, compare, streaming, escaping, errors",
          "[serve][browser][e2e]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY(
      "SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): the page was not tested");
  return;
#else
  const auto program = chromium();
  if (program.empty()) {
    ATTNMT_MISSING_DEPENDENCY(
        "SKIPPED: no chromium on this machine (scripts/install_deps.sh --test installs it): the page was not tested");
    return;
  }
  auto dir = temp_dir("page");
  // Two tiny models: global attention, and hard monotonic attention whose head starts out
  // stopping often (score_bias_init 0), so that it writes before the end of its source.
  write(dir / "gen.yaml", tiny_config(dir / "gen", 80));
  auto mono_config = tiny_config(dir / "mono", 300);
  const std::string global = "attention: {type: luong_general}";
  mono_config.replace(mono_config.find(global), global.size(), "attention: {type: monotonic, score_bias_init: 0.0}");
  write(dir / "mono.yaml", mono_config);
  for (const char* name : {"gen", "mono"}) {
    const auto r = run("train " + (dir / (std::string(name) + ".yaml")).string());
    INFO(r.output);
    REQUIRE(r.status == 0);
  }
  const std::string line = attnmt::read_lines(kData + "/tiny.de").at(0);
  const std::string reference = attnmt::read_lines(kData + "/tiny.en").at(0);
  write(dir / "line.txt", line + "\n");
  auto r = run("translate --model " + (dir / "gen").string() + " --input " + (dir / "line.txt").string() +
               " --beam-size 3 --output " + (dir / "want.txt").string());
  REQUIRE(r.status == 0);
  const auto want = attnmt::read_lines((dir / "want.txt").string()).at(0);
  r = run("translate --model " + (dir / "mono").string() + " --input " + (dir / "line.txt").string() +
          " --streaming --output " + (dir / "stream.txt").string() + " --delays " + (dir / "delays.txt").string());
  REQUIRE(r.status == 0);
  const auto delays_line = attnmt::read_lines((dir / "delays.txt").string()).at(0);  // "lagging<TAB>g(1) g(2) ..."
  const double want_lagging = std::stod(delays_line.substr(0, delays_line.find('\t')));
  std::vector<int> want_delays;
  {
    std::istringstream in(delays_line.substr(delays_line.find('\t') + 1));
    for (int d; in >> d;) want_delays.push_back(d);
  }
  REQUIRE(!want_delays.empty());

  {
    PageServer server(
        dir, "--model gen=" + (dir / "gen").string() + " --model mono=" + (dir / "mono").string() + " --beam-size 3");
    INFO(server.log_text());
    REQUIRE(server.port > 0);
    {  // the page itself: HTML with a policy that runs its own script only; it never writes markup
      httplib::Client client("127.0.0.1", server.port);
      const auto page = client.Get("/");
      REQUIRE(page);
      CHECK(page->status == 200);
      CHECK_THAT(page->get_header_value("Content-Type"), Contains("text/html"));
      CHECK_THAT(page->get_header_value("Content-Security-Policy"), Contains("script-src 'sha256-"));
      CHECK_THAT(page->get_header_value("Content-Security-Policy"), Contains("connect-src 'self'"));
      CHECK(page->body.find("innerHTML") == std::string::npos);
      for (const char* fetched : {"<script src", "<link", "url(", "@import", "<iframe"}) {
        INFO(fetched);
        CHECK(page->body.find(fetched) == std::string::npos);  // nothing loaded from a file or another origin
      }
    }
    const Browser browser{program, dir / "profile", server.port};
    const std::string text = "?text=" + url_encode(line);

    {  // translate view: the translation, and a heatmap cell per source x target subword with the API's weight
      const auto api = post_json(server.port, "/v1/translate",
                            {{"model", "gen"}, {"text", {line}}, {"beam_size", 3}, {"n_best", 1}, {"attention", true}});
      const auto& best = api["translations"][0][0];
      REQUIRE(best["text"] == want);
      const auto& attention = best["attention"];
      const size_t rows = attention["tgt"].size(), cols = attention["src"].size();
      REQUIRE(rows > 1);
      REQUIRE(cols > 1);

      const auto dom = browser.dom(text + "&model=gen");
      INFO(dom.substr(0, 3000));
      REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
      CHECK(message(dom).empty());
      CHECK(hyp_text(dom, dom.find("id=\"translations\"")) == as_html_text(want));
      CHECK_THAT(dom, Contains("<p class=\"source\">" + as_html_text(line) + "</p>"));
      CHECK_THAT(dom,
                 Contains("data-rows=\"" + std::to_string(rows) + "\" data-cols=\"" + std::to_string(cols) + "\""));
      static const std::regex cell(R"re(<td data-t="(\d+)" data-s="(\d+)" data-weight="([^"]+)")re");
      std::map<std::pair<size_t, size_t>, double> cells;
      for (std::sregex_iterator it(dom.begin(), dom.end(), cell), end; it != end; ++it) {
        cells[{std::stoul((*it)[1]), std::stoul((*it)[2])}] = std::stod((*it)[3]);
      }
      REQUIRE(cells.size() == rows * cols);
      for (size_t t = 0; t < rows; ++t) {
        for (size_t s = 0; s < cols; ++s) {
          INFO("cell " << t << ", " << s);
          CHECK(std::abs(cells.at({t, s}) - attention["weights"][t][s].get<double>()) < 1e-6);
        }
      }
      // the subword labels, and the word links the server drew from the same attention
      for (const auto& piece : attention["src"]) CHECK_THAT(dom, Contains(">" + as_html_text(piece) + "</th>"));
      size_t links = 0;
      for (const auto& link : attention["links"]) {
        links += occurrences(dom, "data-src=\"" + std::to_string(link[0].get<int>()) + "\" data-tgt=\"" +
                                std::to_string(link[1].get<int>()) + "\"");
      }
      CHECK(links == attention["links"].size());
      CHECK(occurrences(dom, "<li data-src=") == attention["links"].size());
      CHECK(attention["links"].size() == attention["tgt_words"].size());  // one link per target word (argmax)
    }

    {  // compare view: both models side by side, with the server's BLEU and chrF against the reference
      std::map<std::string, std::string> best;
      for (const char* name : {"gen", "mono"}) {
        best[name] = post_json(server.port, "/v1/translate",
                          {{"model", name}, {"text", {line}}, {"beam_size", 3}})["translations"][0][0]["text"];
      }
      const auto dom = browser.dom(text + "&compare=gen,mono&ref=" + url_encode(reference));
      INFO(dom.substr(0, 3000));
      REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
      CHECK(message(dom).empty());
      CHECK(occurrences(dom, "class=\"heatmap\"") == 2);
      for (const char* name : {"gen", "mono"}) {
        const auto at = dom.find("<div class=\"column\" data-model=\"" + std::string(name) + "\">");
        REQUIRE(at != std::string::npos);
        CHECK(hyp_text(dom, at) == as_html_text(best[name]));
        const auto bleu = attnmt::corpus_bleu({best[name]}, {reference});
        const auto chrf = attnmt::corpus_chrf({best[name]}, {reference});
        static const std::regex scores(R"re(data-bleu="([^"]+)" data-chrf="([^"]+)")re");
        std::smatch m;
        const std::string column = dom.substr(at, 400);
        REQUIRE(std::regex_search(column, m, scores));
        CHECK(std::stod(m[1]) == Approx(bleu.score).margin(1e-9));
        CHECK(std::stod(m[2]) == Approx(chrf.score).margin(1e-9));
      }
      CHECK(best["gen"] == want);
    }

    {  // streaming view: a step per target subword, with the source subwords translate --streaming read
      const auto dom = browser.dom(text + "&model=mono&view=stream");
      INFO(dom.substr(0, 3000));
      REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
      CHECK(message(dom).empty());
      static const std::regex step(R"re(<li class="step[^"]*" data-step="(\d+)" data-read="(\d+)")re");
      std::vector<int> steps;
      for (std::sregex_iterator it(dom.begin(), dom.end(), step), end; it != end; ++it) {
        CHECK(std::stoi((*it)[1]) == static_cast<int>(steps.size()));
        steps.push_back(std::stoi((*it)[2]));
      }
      CHECK(steps == want_delays);
      static const std::regex lagging(R"re(class="stream" data-model="mono" data-lagging="([^"]+)")re");
      std::smatch m;
      REQUIRE(std::regex_search(dom, m, lagging));
      CHECK(std::stod(m[1]) == Approx(want_lagging).margin(5e-5));
      // what it wrote is what translate --streaming wrote
      const auto api = post_json(server.port, "/v1/stream", {{"model", "mono"}, {"text", {line}}});
      CHECK(api["streams"][0]["text"] == attnmt::read_lines((dir / "stream.txt").string()).at(0));
      CHECK(api["streams"][0]["delays"].get<std::vector<int> >() == want_delays);
      // a model that cannot stream: the server refuses, the page says why
      int status = 0;
      const auto refused = post_json(server.port, "/v1/stream", {{"model", "gen"}, {"text", {line}}}, &status);
      CHECK(status == 400);
      CHECK_THAT(refused["error"].get<std::string>(), Contains("cannot stream"));
      const auto note = browser.dom(text + "&model=gen&view=stream");
      CHECK_THAT(message(note), Contains("cannot stream"));
    }

    {  // an injected source is shown as text and runs nothing
      const std::string attack =
          "<img src=x onerror=\"document.title='pwned';document.body.appendChild(document.createElement('pwned'))\">"
          "<script>document.title='pwned'</script><b>bold</b>";
      for (const std::string view : {"&model=gen", "&compare=gen,mono", "&model=mono&view=stream"}) {
        INFO(view);
        const auto dom = browser.dom("?text=" + url_encode(attack) + view);
        REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
        CHECK_THAT(dom, Contains("<title>attnmt</title>"));
        CHECK(occurrences(dom, "<pwned") == 0);
        CHECK(occurrences(dom, "<img src=\"x\"") == 0);  // an element would be serialized with quotes
        CHECK(occurrences(dom, "<b>bold") == 0);
        CHECK(message(dom).empty());
      }
      const auto dom = browser.dom("?text=" + url_encode(attack) + "&model=gen");
      CHECK_THAT(dom, Contains("<p class=\"source\">" + as_html_text(attack) + "</p>"));
    }

    {  // the server's errors are messages on the page
      auto dom = browser.dom(text + "&model=gen&beam=99");
      CHECK(message(dom) == "error: 400: beam_size: expected an integer from 1 to 32, got 99");
      dom = browser.dom(text + "&model=nope");
      CHECK_THAT(message(dom), Contains("error: 404: unknown model \"nope\" (models: gen, mono)"));
      dom = browser.dom("?text=" + std::string(5000, 'a') + "&model=gen");
      CHECK_THAT(message(dom), Contains("error: 413: sentence 0 has 5000 bytes (at most 4096)"));
      dom = browser.dom(text + "&compare=gen,mono&ref=" + url_encode("one\ntwo"));
      CHECK_THAT(message(dom), Contains("error: 400: hypotheses has 1 lines but references 2"));
      CHECK_THAT(dom, Contains("data-ready=\"true\""));  // the page still works
    }
  }
  {  // with --api-key the page loads without the key, and the server's 401 is a message asking for it
    PageServer keyed(dir, "--model gen=" + (dir / "gen").string() + " --api-key page-test-key");
    INFO(keyed.log_text());
    REQUIRE(keyed.port > 0);
    const Browser locked{program, dir / "profile", keyed.port};
    const auto dom = locked.dom("?text=" + url_encode(line) + "&model=gen");
    CHECK_THAT(dom, Contains("data-ready=\"true\""));
    CHECK_THAT(message(dom), Contains("error: 401: "));
    CHECK_THAT(message(dom), Contains("enter the server's API key"));
    CHECK(occurrences(dom, "class=\"hyp") == 0);
  }
  fs::remove_all(dir);
#endif
}

#ifdef ATTNMT_TEST_HTTP
namespace {

// The text inside `html` with its tags taken out (entities left as the serializer wrote them).
std::string without_tags(const std::string& html) {
  static const std::regex tag("<[^>]*>");
  return std::regex_replace(html, tag, "");
}

// Attribute `name`'s value in the first element after `from` that has one ("<none>" if none).
std::string attribute(const std::string& dom, const std::string& name, size_t from = 0) {
  const std::string open = " " + name + "=\"";
  const auto at = dom.find(open, from);
  if (at == std::string::npos) return "<none>";
  const auto begin = at + open.size();
  return dom.substr(begin, dom.find('"', begin) - begin);
}

// Text as the DOM serializer writes it in an attribute value.
std::string as_html_attribute(const std::string& text) { return escaped(text, {{'&', "&amp;"}, {'"', "&quot;"}}); }

// The translation's text up to word i (words: runs of non-spaces), the spaces before it cut: the
// prefix that clicking word i asks alternatives after.
std::string prefix_before(const std::string& text, size_t i) {
  size_t at = 0, word = 0;
  for (;;) {
    at = text.find_first_not_of(' ', at);
    if (at == std::string::npos || word == i) break;
    at = text.find(' ', at);
    ++word;
    if (at == std::string::npos) break;
  }
  std::string prefix = text.substr(0, at == std::string::npos ? text.size() : at);
  while (!prefix.empty() && prefix.back() == ' ') prefix.pop_back();
  return prefix;
}

std::vector<std::string> words_of(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

// The alternatives list the page shows: per item its rank, piece, log-prob, prob and completion.
struct ShownAlternative {
  int rank;
  std::string piece;
  double log_prob, prob;
  std::string completion;
};
std::vector<ShownAlternative> shown_alternatives(const std::string& dom) {
  static const std::regex button(
      R"re(<button type="button" class="alt" data-rank="(\d+)" data-piece="([^"]*)" data-log-prob="([^"]+)" data-prob="([^"]+)">)re");
  std::vector<ShownAlternative> out;
  const std::string open = "<li data-rank=\"";
  for (auto at = dom.find(open); at != std::string::npos; at = dom.find(open, at + 1)) {
    const std::string item = dom.substr(at, dom.find("</li>", at) - at);
    std::smatch m;
    if (!std::regex_search(item, m, button)) continue;
    out.push_back({std::stoi(m[1]), m[2], std::stod(m[3]), std::stod(m[4]), attribute(item, "data-text")});
  }
  return out;
}

// The alternatives shown against the server's own answer for the same source and prefix.
void check_alternatives(const std::string& dom, const json& api) {
  const auto shown = shown_alternatives(dom);
  const auto& want = api["alternatives"];
  REQUIRE(shown.size() == want.size());
  for (size_t j = 0; j < shown.size(); ++j) {
    INFO("alternative " << j);
    CHECK(shown[j].rank == static_cast<int>(j));
    CHECK(shown[j].piece == as_html_attribute(want[j]["piece"].get<std::string>()));
    CHECK(shown[j].log_prob == Approx(want[j]["log_prob"].get<double>()).margin(1e-12));
    CHECK(shown[j].prob == Approx(want[j]["prob"].get<double>()).margin(1e-12));
    CHECK(shown[j].completion == as_html_attribute(want[j]["translation"]["text"].get<std::string>()));
  }
}

}  // namespace
#endif

TEST_CASE("serve page, interactive view: words stream in, a clicked word lists the server's alternatives, a pick "
          "shows its completion",
          "[serve][browser][e2e][interactive]") {
#ifndef ATTNMT_TEST_HTTP
  ATTNMT_MISSING_DEPENDENCY(
      "SKIPPED: cpp-httplib is not installed (Debian: libcpp-httplib-dev): the page was not tested");
  return;
#else
  const auto program = chromium();
  if (program.empty()) {
    ATTNMT_MISSING_DEPENDENCY(
        "SKIPPED: no chromium on this machine (scripts/install_deps.sh --test installs it): the page was not tested");
    return;
  }
  if (shell("command -v python3").empty()) {
    ATTNMT_MISSING_DEPENDENCY("SKIPPED: no python3 to drive Chromium with (tests/e2e/page_when_ready.py)");
    return;
  }
  auto dir = temp_dir("page_interactive");
  // The committed tiny model (tests/data/model_v1): no training, and its translations are long.
  PageServer server(dir, "--model v1=" + kData + "/model_v1 --beam-size 3");
  INFO(server.log_text());
  REQUIRE(server.port > 0);
  const Browser browser{program, dir / "profile", server.port};
  const std::string line = attnmt::read_lines(kData + "/tiny.de").at(3);
  const std::string view = "?text=" + url_encode(line) + "&model=v1&view=interactive";
  const std::string want =
      post_json(server.port, "/v1/translate", {{"model", "v1"}, {"text", {line}}})["translations"][0][0]["text"];
  const auto want_words = words_of(want);
  REQUIRE(want_words.size() >= 6);

  {  // the translation as it was streamed: its events, concatenated, are the translation not streamed
    const auto dom = browser.ready_dom(view);
    INFO(dom.substr(0, 4000));
    REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
    CHECK(message(dom).empty());
    const auto box = dom.find("<div class=\"sentence interactive\"");
    REQUIRE(box != std::string::npos);
    CHECK(attribute(dom, "data-status", box) == "done");
    CHECK(attribute(dom, "data-final", box) == as_html_attribute(want));
    const auto live_at = dom.find("<p class=\"live\"", box);
    REQUIRE(live_at != std::string::npos);
    const std::string live = dom.substr(live_at, dom.find("</p>", live_at) - live_at);
    // each chunk is one word event, in order; the last one may carry several words
    static const std::regex chunk(R"re(<span class="chunk" data-event="(\d+)">)re");
    std::vector<size_t> starts;
    for (std::sregex_iterator it(live.begin(), live.end(), chunk), end; it != end; ++it) {
      CHECK(std::stoul((*it)[1]) == starts.size());
      starts.push_back(static_cast<size_t>(it->position()));
    }
    CHECK(attribute(dom, "data-events", box) == std::to_string(starts.size()));
    // It grew as it was decided, not all at the end (beam search decides words in runs: an event
    // may carry several).
    CHECK(starts.size() >= 3);
    std::string streamed;
    for (size_t c = 0; c < starts.size(); ++c) {
      const auto end = c + 1 < starts.size() ? starts[c + 1] : live.size();
      streamed += without_tags(live.substr(starts[c], end - starts[c]));
    }
    CHECK(streamed == as_html_text(want));
    // and its words are the clickable ones
    static const std::regex word(R"re(<span class="word" tabindex="0" role="button" data-w="(\d+)">([^<]*)</span>)re");
    std::vector<std::string> words;
    for (std::sregex_iterator it(live.begin(), live.end(), word), end; it != end; ++it) {
      CHECK(std::stoul((*it)[1]) == words.size());
      words.push_back((*it)[2]);
    }
    CHECK(words.size() == want_words.size());
    for (size_t i = 0; i < std::min(words.size(), want_words.size()); ++i) CHECK(words[i] == as_html_text(want_words[i]));
  }

  const size_t clicked = 2;
  const std::string prefix = prefix_before(want, clicked);
  REQUIRE(!prefix.empty());
  const auto api = post_json(server.port, "/v1/alternatives",
                             {{"model", "v1"}, {"text", line}, {"prefix", prefix}, {"k", 5}, {"beam_size", 3}});
  REQUIRE(api["alternatives"].size() == 5);
  {  // a click on word 2: the alternatives after the two words before it, as the server gives them
    const auto dom = browser.ready_dom(view + "&word=" + std::to_string(clicked));
    INFO(dom.substr(0, 4000));
    REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
    CHECK(message(dom).empty());
    CHECK_THAT(dom, Contains("<ol class=\"alternatives\" data-word=\"2\" data-prefix=\"" + as_html_attribute(prefix) + "\">"));
    CHECK_THAT(dom, Contains("class=\"word asked\" tabindex=\"0\" role=\"button\" data-w=\"2\""));
    check_alternatives(dom, api);
  }

  // The pick: an alternative other than the subword the translation has there, so that the rest
  // is decoded again.
  size_t pick = 0;
  while (pick < 5 && api["alternatives"][pick]["translation"]["text"] == want) ++pick;
  REQUIRE(pick < 5);
  const std::string completion = api["alternatives"][pick]["translation"]["text"];
  {  // picking it shows its completion: the words before kept, the rest re-decoded
    const auto steps = "&word=2&pick=" + std::to_string(pick);
    const auto dom = browser.ready_dom(view + steps);
    INFO(dom.substr(0, 4000));
    REQUIRE_THAT(dom, Contains("data-ready=\"true\""));
    CHECK(message(dom).empty());
    const auto box = dom.find("<div class=\"sentence interactive\"");
    REQUIRE(box != std::string::npos);
    CHECK(attribute(dom, "data-status", box) == "picked");
    CHECK(attribute(dom, "data-final", box) == as_html_attribute(completion));
    const auto live_at = dom.find("<p class=\"live\"", box);
    CHECK(without_tags(dom.substr(live_at, dom.find("</p>", live_at) - live_at)) == as_html_text(completion));
    // kept: the words wholly within the prefix (the word before the pick is not, if the pick goes on with it)
    const std::string piece = api["alternatives"][pick]["piece"];
    const bool new_word = piece == "</s>" || piece.rfind("\xE2\x96\x81", 0) == 0;
    CHECK(occurrences(dom, "class=\"word kept\"") ==
          (completion.rfind(prefix, 0) == 0 ? (new_word ? clicked : clicked - 1) : 0));
    CHECK(occurrences(dom, "class=\"word redecoded\"") + occurrences(dom, "class=\"word kept\"") ==
          words_of(completion).size());
    CHECK(occurrences(dom, "<ol class=\"alternatives\"") == 0);
    CHECK_THAT(attribute(dom, "href", dom.find("id=\"share-link\"")), Contains(as_html_attribute(steps)));

    // and its words can be clicked in turn: alternatives after the completion's first words
    const auto again = browser.ready_dom(view + steps + "&word=4");
    INFO(again.substr(0, 4000));
    CHECK(message(again).empty());
    check_alternatives(again, post_json(server.port, "/v1/alternatives",
                                        {{"model", "v1"}, {"text", line}, {"prefix", prefix_before(completion, 4)},
                                         {"k", 5}, {"beam_size", 3}}));
  }

  {  // what the view cannot do is a message: two lines, and the server's 400 for k 0
    auto dom = browser.ready_dom("?text=" + url_encode(line + "\n" + line) + "&model=v1&view=interactive");
    CHECK_THAT(message(dom), Contains("one sentence at a time"));
    dom = browser.ready_dom(view + "&k=0&word=1");
    CHECK_THAT(message(dom), Contains("error: 400: k: "));
    CHECK_THAT(dom, Contains("data-status=\"done\""));  // the translation stays
  }
  fs::remove_all(dir);
#endif
}
