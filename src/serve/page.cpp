#include "serve/page.h"

namespace attnmt {

// Defined in the source CMake generates from src/serve/page/ (page.cmake).
extern const char* const kPageHtml;
extern const char* const kPageScriptSha256;
extern const char* const kPageStyleSha256;

const std::string& page_html() {
  static const std::string html(kPageHtml);
  return html;
}

std::vector<std::pair<std::string, std::string>> page_headers() {
  // Only the page's own script and style (by their hashes) run; everything else is refused, so even
  // a bug that wrote data as markup could neither run an injected script or event handler nor send
  // anything to another origin.
  return {{"Content-Security-Policy", std::string("default-src 'none'; script-src 'sha256-") + kPageScriptSha256 +
                                          "'; style-src 'sha256-" + kPageStyleSha256 +
                                          "'; connect-src 'self'; img-src 'self'; base-uri 'none'; "
                                          "form-action 'none'; frame-ancestors 'none'"},
          {"X-Content-Type-Options", "nosniff"},
          {"Referrer-Policy", "no-referrer"},
          {"Cache-Control", "no-cache"}};
}

}  // namespace attnmt
