// The translation page `GET /` answers: one HTML document with its CSS and JavaScript inlined
// (src/serve/page/index.html, page.css, page.js, turned into a string constant by CMake at
// configure time, so the binary needs no file, CDN or network). It calls the JSON endpoints only
// (GET /v1/models, POST /v1/translate, /v1/stream, /v1/score) and writes what they answer with
// textContent, never as markup.
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace attnmt {

const std::string& page_html();

// The headers sent with the page: a Content-Security-Policy that lets it reach this server only
// (its own script and style by their SHA-256, no other origin, no framing), and no MIME sniffing.
std::vector<std::pair<std::string, std::string>> page_headers();

}  // namespace attnmt
