#include "report/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

#include "util/utf8.h"

namespace attnmt {
namespace {

std::string fixed(double v, int decimals) {
  if (!std::isfinite(v)) return "\xE2\x80\x93";  // –
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  return buf;
}

// A p-value against the first row, "*" where p < 0.05; "–" for the first row itself.
std::string p_value_text(double p) { return fixed(p, 3) + (std::isfinite(p) && p < 0.05 ? "*" : ""); }

std::string grouped(int64_t v) {
  std::string digits = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return (v < 0 ? "-" : "") + out;
}

struct Column {
  std::string key;     // csv / json name
  std::string header;  // table heading
  std::function<std::string(const VariantRow&)> text;
  std::function<double(const VariantRow&)> number;  // empty for text columns
};

// "mean ± sd" over seeds, the value alone for one run.
std::string with_spread(double v, const Spread& spread, int decimals) {
  return std::isfinite(spread.sd) ? fixed(v, decimals) + " \xC2\xB1 " + fixed(spread.sd, decimals) : fixed(v, decimals);
}

std::vector<Column> columns(const CompareReport& report) {
  const bool aer = !report.gold_links.empty();
  std::vector<Column> c = {
      {"variant", "variant", [](const VariantRow& r) { return r.variant; }, nullptr},
      {"attention", "attention", [](const VariantRow& r) { return r.attention; }, nullptr},
      {"parameters", "parameters", [](const VariantRow& r) { return grouped(r.parameters); },
       [](const VariantRow& r) { return static_cast<double>(r.parameters); }},
      {"bleu", "BLEU", [](const VariantRow& r) { return with_spread(r.bleu, r.bleu_spread, 2); },
       [](const VariantRow& r) { return r.bleu; }},
      {"chrf", "chrF", [](const VariantRow& r) { return with_spread(r.chrf, r.chrf_spread, 2); },
       [](const VariantRow& r) { return r.chrf; }},
      {"bleu_p", "p BLEU", [](const VariantRow& r) { return p_value_text(r.bleu_p); },
       [](const VariantRow& r) { return r.bleu_p; }},
      {"chrf_p", "p chrF", [](const VariantRow& r) { return p_value_text(r.chrf_p); },
       [](const VariantRow& r) { return r.chrf_p; }},
      {"valid_ppl", "valid ppl", [](const VariantRow& r) { return with_spread(r.valid_ppl, r.ppl_spread, 2); },
       [](const VariantRow& r) { return r.valid_ppl; }},
      {"train_tgt_tokens_per_sec", "train tgt tok/s",
       [](const VariantRow& r) { return fixed(r.train_tokens_per_sec, 0); },
       [](const VariantRow& r) { return r.train_tokens_per_sec; }},
      {"beam_size", "beam", [](const VariantRow& r) { return std::to_string(r.beam_size); },
       [](const VariantRow& r) { return static_cast<double>(r.beam_size); }},
      {"decode_sentences_per_sec", "decode sent/s",
       [](const VariantRow& r) { return fixed(r.decode_sentences_per_sec, 1); },
       [](const VariantRow& r) { return r.decode_sentences_per_sec; }},
      {"decode_peak_rss_mib", "decode peak RSS MiB", [](const VariantRow& r) { return fixed(r.peak_rss_mib, 0); },
       [](const VariantRow& r) { return r.peak_rss_mib; }},
  };
  if (aer) {
    c.push_back({"aer", "AER %",
                 [](const VariantRow& r) {
                   const Spread percent{100 * r.aer_spread.sd, 100 * r.aer_spread.min, 100 * r.aer_spread.max};
                   return with_spread(100 * r.aer, percent, 1);
                 },
                 [](const VariantRow& r) { return 100 * r.aer; }});
  }
  if (report.streaming) {
    auto figure = [&](const char* key, const char* header, double VariantRow::*member, int decimals) {
      c.push_back({key, header, [member, decimals](const VariantRow& r) { return fixed(r.*member, decimals); },
                   [member](const VariantRow& r) { return r.*member; }});
    };
    figure("stream_bleu", "stream BLEU", &VariantRow::stream_bleu, 2);
    figure("stream_chrf", "stream chrF", &VariantRow::stream_chrf, 2);
    figure("al", "AL", &VariantRow::stream_al, 2);
    figure("laal", "LAAL", &VariantRow::stream_laal, 2);
    figure("ap", "AP", &VariantRow::stream_ap, 3);
    figure("dal", "DAL", &VariantRow::stream_dal, 2);
  }
  c.push_back({"steps", "steps", [](const VariantRow& r) { return grouped(r.steps); },
               [](const VariantRow& r) { return static_cast<double>(r.steps); }});
  c.push_back({"train_minutes", "train min", [](const VariantRow& r) { return fixed(r.train_minutes, 1); },
               [](const VariantRow& r) { return r.train_minutes; }});
  return c;
}

nlohmann::json number_or_null(double v) { return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr); }

// --- inline SVG charts -------------------------------------------------------------------------

const std::vector<std::string> kPalette = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2",
                                           "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
                                           "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363"};

std::string color_of(size_t i) { return kPalette[i % kPalette.size()]; }

// Round tick step for a range: 1, 2 or 5 times a power of ten, about `target` ticks.
double tick_step(double span, int target) {
  if (!(span > 0)) return 1;
  const double raw = span / target;
  const double base = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * base) return m * base;
  }
  return 10 * base;
}

std::string tick_label(double v, double step) {
  const int decimals = step >= 1 ? 0 : static_cast<int>(std::ceil(-std::log10(step)));
  if (std::fabs(v) >= 10000 && decimals == 0) return grouped(static_cast<int64_t>(std::llround(v)));
  return fixed(v, decimals);
}

struct Series {
  std::string name, color;
  std::vector<std::pair<double, double>> points;
};

std::string line_chart(const std::string& title, const std::string& x_label, const std::string& y_label,
                       const std::vector<Series>& series, bool log_y = false,
                       const std::string& empty = "no validation records", bool labelled = false) {
  const double W = 440, H = 280, left = 56, right = 12, top = 28, bottom = 42;
  double x0 = INFINITY, x1 = -INFINITY, y0 = INFINITY, y1 = -INFINITY;
  auto ty = [&](double y) { return log_y ? std::log10(y) : y; };
  for (const auto& s : series) {
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (log_y && y <= 0)) continue;
      x0 = std::min(x0, x), x1 = std::max(x1, x), y0 = std::min(y0, ty(y)), y1 = std::max(y1, ty(y));
    }
  }
  std::ostringstream o;
  o << "<svg class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
    << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"11\">"
    << "<text x=\"" << left << "\" y=\"16\" font-weight=\"bold\" font-size=\"12\">" << xml_escape(title) << "</text>";
  if (!std::isfinite(x0)) {
    o << "<text x=\"" << left << "\" y=\"" << H / 2 << "\" fill=\"#888\">" << xml_escape(empty) << "</text></svg>";
    return o.str();
  }
  if (x1 == x0) x1 = x0 + 1;
  if (y1 == y0) y1 = y0 + 1;
  const double xs = tick_step(x1 - x0, 5), ys = tick_step(y1 - y0, 5);
  x0 = std::floor(x0 / xs) * xs, x1 = std::ceil(x1 / xs) * xs;
  y0 = std::floor(y0 / ys) * ys, y1 = std::ceil(y1 / ys) * ys;
  auto px = [&](double x) { return left + (x - x0) / (x1 - x0) * (W - left - right); };
  auto py = [&](double y) { return H - bottom - (ty(y) - y0) / (y1 - y0) * (H - top - bottom); };
  auto py_raw = [&](double v) { return H - bottom - (v - y0) / (y1 - y0) * (H - top - bottom); };
  for (double x = x0; x <= x1 + xs / 2; x += xs) {
    o << "<line x1=\"" << px(x) << "\" x2=\"" << px(x) << "\" y1=\"" << top << "\" y2=\"" << H - bottom
      << "\" stroke=\"#eee\"/><text x=\"" << px(x) << "\" y=\"" << H - bottom + 14 << "\" text-anchor=\"middle\">"
      << tick_label(x, xs) << "</text>";
  }
  // y grid: round steps, or on a log axis 1, 2, 5 x 10^k (1 x 10^k alone over many decades)
  std::vector<std::pair<double, std::string>> y_ticks;  // position (axis units), label
  if (log_y) {
    const bool decades_only = y1 - y0 > 3;
    for (int k = static_cast<int>(std::floor(y0)); k <= static_cast<int>(std::ceil(y1)); ++k) {
      for (double m : {1.0, 2.0, 5.0}) {
        if (decades_only && m != 1.0) continue;
        const double v = m * std::pow(10.0, k), at = std::log10(v);
        if (at >= y0 - 1e-9 && at <= y1 + 1e-9) y_ticks.emplace_back(at, tick_label(v, std::min(1.0, v)));
      }
    }
  }
  if (y_ticks.size() < 2) {  // linear axis, or a log axis too narrow for round values
    y_ticks.clear();
    for (double y = y0; y <= y1 + ys / 2; y += ys) {
      const double v = log_y ? std::pow(10.0, y) : y;
      y_ticks.emplace_back(y, tick_label(v, log_y ? tick_step(std::pow(10.0, y1) - std::pow(10.0, y0), 5) : ys));
    }
  }
  for (const auto& [y, label] : y_ticks) {
    o << "<line x1=\"" << left << "\" x2=\"" << W - right << "\" y1=\"" << py_raw(y) << "\" y2=\"" << py_raw(y)
      << "\" stroke=\"#eee\"/><text x=\"" << left - 4 << "\" y=\"" << py_raw(y) + 4 << "\" text-anchor=\"end\">"
      << label << "</text>";
  }
  o << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << W - left - right << "\" height=\""
    << H - top - bottom << "\" fill=\"none\" stroke=\"#999\"/>"
    << "<text x=\"" << (left + W - right) / 2 << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">"
    << xml_escape(x_label) << "</text>"
    << "<text transform=\"translate(12," << (top + H - bottom) / 2 << ") rotate(-90)\" text-anchor=\"middle\">"
    << xml_escape(y_label) << "</text>";
  for (const auto& s : series) {
    std::string path;
    for (const auto& [x, y] : s.points) {
      if (!std::isfinite(x) || !std::isfinite(y) || (log_y && y <= 0)) continue;
      path += (path.empty() ? "M" : " L") + fixed(px(x), 1) + "," + fixed(py(y), 1);
      o << "<circle cx=\"" << fixed(px(x), 1) << "\" cy=\"" << fixed(py(y), 1) << "\" r=\""
        << (labelled ? "4" : "2.5") << "\" fill=\"" << s.color << "\"><title>" << xml_escape(s.name) << ": "
        << fixed(y, 2) << " at " << fixed(x, 1) << "</title></circle>";
    }
    if (labelled && !path.empty()) {  // the series' name beside its last point
      const auto& [x, y] = s.points.back();
      const bool right_half = px(x) > (left + W - right) / 2;  // names there run leftwards, inside the frame
      o << "<text x=\"" << fixed(px(x) + (right_half ? -6 : 6), 1) << "\" y=\"" << fixed(py(y) - 5, 1)
        << "\" fill=\"" << s.color << "\" font-size=\"10\" text-anchor=\"" << (right_half ? "end" : "start") << "\">"
        << xml_escape(s.name) << "</text>";
    }
    if (!path.empty()) {
      o << "<path d=\"" << path << "\" fill=\"none\" stroke=\"" << s.color << "\" stroke-width=\"1.6\"><title>"
        << xml_escape(s.name) << "</title></path>";
    }
  }
  o << "</svg>";
  return o.str();
}

std::string aer_bars(const CompareReport& report) {
  const double bar = 18, gap = 6, left = 150, width = 320, right = 150;
  const double H = 30 + report.variants.size() * (bar + gap) + 24;
  std::ostringstream o;
  o << "<svg id=\"aer-bars\" xmlns=\"http://www.w3.org/2000/svg\" width=\"" << left + width + right << "\" height=\""
    << H << "\" font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"11\">"
    << "<text x=\"" << left << "\" y=\"16\" font-weight=\"bold\" font-size=\"12\">AER (lower is better)</text>";
  for (int t = 0; t <= 100; t += 20) {
    const double x = left + width * t / 100.0;
    o << "<line x1=\"" << x << "\" x2=\"" << x << "\" y1=\"24\" y2=\"" << H - 20 << "\" stroke=\"#eee\"/>"
      << "<text x=\"" << x << "\" y=\"" << H - 6 << "\" text-anchor=\"middle\">" << t << "%</text>";
  }
  for (size_t i = 0; i < report.variants.size(); ++i) {
    const auto& r = report.variants[i].row;
    const double y = 28 + i * (bar + gap);
    o << "<text x=\"" << left - 6 << "\" y=\"" << y + bar - 5 << "\" text-anchor=\"end\">" << xml_escape(r.variant)
      << "</text>";
    if (std::isfinite(r.aer)) {
      o << "<rect class=\"aer-bar\" data-variant=\"" << xml_escape(r.variant) << "\" x=\"" << left << "\" y=\"" << y
        << "\" width=\"" << fixed(width * r.aer, 1) << "\" height=\"" << bar << "\" fill=\"" << color_of(i) << "\"/>"
        << "<text x=\"" << left + width * r.aer + 4 << "\" y=\"" << y + bar - 5 << "\">" << fixed(100 * r.aer, 1)
        << "% (P " << fixed(100 * r.precision, 1) << ", R " << fixed(100 * r.recall, 1) << ")</text>";
      if (std::isfinite(r.aer_spread.min)) {  // the seeds' range
        o << "<line class=\"aer-range\" x1=\"" << fixed(left + width * r.aer_spread.min, 1) << "\" x2=\""
          << fixed(left + width * r.aer_spread.max, 1) << "\" y1=\"" << y + bar / 2 << "\" y2=\"" << y + bar / 2
          << "\" stroke=\"#222\" stroke-width=\"1.5\"><title>seeds: " << fixed(100 * r.aer_spread.min, 1) << "% to "
          << fixed(100 * r.aer_spread.max, 1) << "%</title></line>";
      }
    }
  }
  o << "</svg>";
  return o.str();
}

const char* kStyle = R"(
body { font-family: "DejaVu Sans", Verdana, sans-serif; margin: 24px; color: #222; font-size: 14px; }
h1 { font-size: 22px; margin-bottom: 4px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
.meta { color: #555; }
table#results { border-collapse: collapse; margin-top: 8px; }
#results th, #results td { border: 1px solid #ccc; padding: 4px 8px; }
#results th { background: #f3f3f3; cursor: pointer; user-select: none; white-space: nowrap; }
#results th[data-order="asc"]::after { content: " \25B2"; } #results th[data-order="desc"]::after { content: " \25BC"; }
#results td.num { text-align: right; font-variant-numeric: tabular-nums; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
.legend span { display: inline-block; margin-right: 14px; } .legend i { display: inline-block; width: 18px; height: 4px; vertical-align: middle; margin-right: 4px; }
.sample { margin-bottom: 20px; } .sample p { margin: 2px 0; }
.maps { display: flex; flex-wrap: wrap; gap: 14px; align-items: flex-start; }
figure.map { margin: 0; border: 1px solid #ddd; padding: 6px; }
figure.map figcaption { font-weight: bold; margin-bottom: 4px; } figure.map .hyp { max-width: 420px; color: #333; }
)";

const char* kScript = R"(
document.querySelectorAll('#results th').forEach(function (th, col) {
  th.addEventListener('click', function () {
    var tbody = th.closest('table').tBodies[0];
    var asc = th.dataset.order !== 'asc';
    th.parentNode.querySelectorAll('th').forEach(function (h) { delete h.dataset.order; });
    th.dataset.order = asc ? 'asc' : 'desc';
    var key = function (row) {
      var cell = row.cells[col];
      if (cell.dataset.value === undefined) return cell.textContent;
      return cell.dataset.value === '' ? NaN : parseFloat(cell.dataset.value);
    };
    var rows = Array.prototype.slice.call(tbody.rows);
    rows.sort(function (a, b) {
      var x = key(a), y = key(b);
      if (typeof x === 'number') {
        if (isNaN(x)) return isNaN(y) ? 0 : 1;
        if (isNaN(y)) return -1;
        return asc ? x - y : y - x;
      }
      return asc ? x.localeCompare(y) : y.localeCompare(x);
    });
    rows.forEach(function (r) { tbody.appendChild(r); });
  });
});
// index.html#sort=KEY or #sort=KEY-desc opens the page sorted (KEY: a column's data-key)
(function () {
  var m = location.hash.match(/^#sort=(\w+?)(-desc)?$/);
  var th = m && document.querySelector('#results th[data-key="' + m[1] + '"]');
  if (!th) return;
  th.click();
  if (m[2]) th.click();
})();
)";

}  // namespace

std::string results_terminal(const CompareReport& report) {
  const auto cols = columns(report);
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> width(cols.size(), 0);
  auto length = [](const std::string& s) { return utf8_characters(s); };
  std::vector<std::string> header;
  for (const auto& c : cols) header.push_back(c.header);
  cells.push_back(header);
  for (const auto& v : report.variants) {
    std::vector<std::string> row;
    for (const auto& c : cols) row.push_back(c.text(v.row));
    cells.push_back(row);
  }
  for (const auto& row : cells) {
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], length(row[i]));
  }
  std::string out;
  for (size_t r = 0; r < cells.size(); ++r) {
    for (size_t i = 0; i < cols.size(); ++i) {
      const auto pad = std::string(width[i] - length(cells[r][i]), ' ');
      out += (i ? "  " : "") + (cols[i].number ? pad + cells[r][i] : cells[r][i] + pad);
    }
    while (!out.empty() && out.back() == ' ') out.pop_back();
    out += '\n';
    if (r == 0) {
      for (size_t i = 0; i < cols.size(); ++i) out += (i ? "  " : "") + std::string(width[i], '-');
      out += '\n';
    }
  }
  return out;
}

std::string results_markdown(const CompareReport& report) {
  const auto cols = columns(report);
  std::string out = "|";
  for (const auto& c : cols) out += " " + c.header + " |";
  out += "\n|";
  for (const auto& c : cols) out += c.number ? "---:|" : "---|";
  out += "\n";
  for (const auto& v : report.variants) {
    out += "|";
    for (const auto& c : cols) out += " " + (c.key == "attention" ? "`" + c.text(v.row) + "`" : c.text(v.row)) + " |";
    out += "\n";
  }
  return out;
}

std::string results_csv(const CompareReport& report) {
  auto quote = [](const std::string& s) {
    if (s.find_first_of(",\"\n") == std::string::npos) return s;
    std::string q = "\"";
    for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c);
    return q + "\"";
  };
  auto num = [](double v) {
    if (!std::isfinite(v)) return std::string();
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.6g", v);
    return std::string(buf);
  };
  std::string out =
      "variant,config,attention,decoder_style,parameters,bleu,chrf,bleu_p,chrf_p,valid_ppl,train_tgt_tokens_per_sec,beam_size,"
      "decode_sentences_per_sec,decode_seconds,decode_process_seconds,decode_peak_rss_mib,aer,precision,recall,steps,"
      "train_minutes,seeds,bleu_sd,bleu_min,bleu_max,chrf_sd,chrf_min,chrf_max,valid_ppl_sd,valid_ppl_min,"
      "valid_ppl_max,aer_sd,aer_min,aer_max";
  out += report.streaming ? ",stream_bleu,stream_chrf,al,laal,ap,dal\n" : "\n";
  auto spread = [&](const Spread& s) { return "," + num(s.sd) + "," + num(s.min) + "," + num(s.max); };
  for (const auto& v : report.variants) {
    const auto& r = v.row;
    std::string seeds;
    for (const auto& s : r.seeds) seeds += (seeds.empty() ? "" : " ") + std::to_string(s.seed);
    out += quote(r.variant) + "," + quote(r.config_path) + "," + quote(r.attention) + "," + quote(r.decoder_style) +
           "," + std::to_string(r.parameters) + "," + num(r.bleu) + "," + num(r.chrf) + "," + num(r.bleu_p) + "," +
           num(r.chrf_p) + "," + num(r.valid_ppl) + "," +
           num(r.train_tokens_per_sec) + "," + std::to_string(r.beam_size) + "," + num(r.decode_sentences_per_sec) +
           "," + num(r.decode_seconds) + "," + num(r.decode_process_seconds) + "," + num(r.peak_rss_mib) + "," +
           num(r.aer) + "," + num(r.precision) + "," + num(r.recall) + "," + std::to_string(r.steps) + "," +
           num(r.train_minutes) + "," + seeds + spread(r.bleu_spread) + spread(r.chrf_spread) +
           spread(r.ppl_spread) + spread(r.aer_spread);
    if (report.streaming) {
      out += "," + num(r.stream_bleu) + "," + num(r.stream_chrf) + "," + num(r.stream_al) + "," + num(r.stream_laal) +
             "," + num(r.stream_ap) + "," + num(r.stream_dal);
    }
    out += "\n";
  }
  return out;
}

std::string results_json(const CompareReport& report) {
  nlohmann::json j;
  j["test"] = {{"src", report.test_src}, {"tgt", report.test_tgt}, {"sentences", report.test_sentences}};
  j["baseline"] = report.baseline;  // the variant bleu_p / chrf_p are against
  if (report.seeds > 0) {
    j["seeds_per_config"] = report.seeds;
    j["significance_seed"] = report.significance_seed;  // whose outputs the p-values compare
  }
  if (!report.gold_links.empty()) {
    j["alignment_gold"] = {
        {"text", report.gold_text}, {"links", report.gold_links}, {"sentences", report.gold_sentences}};
  }
  j["variants"] = nlohmann::json::array();
  for (const auto& v : report.variants) {
    const auto& r = v.row;
    nlohmann::json row = {{"variant", r.variant},
                          {"config", r.config_path},
                          {"attention", r.attention},
                          {"decoder_style", r.decoder_style},
                          {"parameters", r.parameters},
                          {"bleu", number_or_null(r.bleu)},
                          {"chrf", number_or_null(r.chrf)},
                          {"bleu_p", number_or_null(r.bleu_p)},
                          {"chrf_p", number_or_null(r.chrf_p)},
                          {"valid_ppl", number_or_null(r.valid_ppl)},
                          {"train_tgt_tokens_per_sec", number_or_null(r.train_tokens_per_sec)},
                          {"beam_size", r.beam_size},
                          {"decode_sentences_per_sec", number_or_null(r.decode_sentences_per_sec)},
                          {"decode_seconds", number_or_null(r.decode_seconds)},
                          {"decode_process_seconds", number_or_null(r.decode_process_seconds)},
                          {"decode_peak_rss_mib", number_or_null(r.peak_rss_mib)},
                          {"aer", number_or_null(r.aer)},
                          {"precision", number_or_null(r.precision)},
                          {"recall", number_or_null(r.recall)},
                          {"steps", r.steps},
                          {"train_minutes", number_or_null(r.train_minutes)}};
    auto curve_json = [](const std::vector<CurvePoint>& curve) {
      auto points = nlohmann::json::array();
      for (const auto& p : curve) {
        points.push_back({{"step", p.step},
                          {"minutes", p.minutes},
                          {"valid_bleu", number_or_null(p.bleu)},
                          {"valid_ppl", number_or_null(p.ppl)}});
      }
      return points;
    };
    if (report.streaming) {
      row["streaming"] = {{"bleu", number_or_null(r.stream_bleu)}, {"chrf", number_or_null(r.stream_chrf)},
                          {"AL", number_or_null(r.stream_al)},     {"LAAL", number_or_null(r.stream_laal)},
                          {"AP", number_or_null(r.stream_ap)},     {"DAL", number_or_null(r.stream_dal)}};
    }
    row["curve"] = v.curves.empty() ? nlohmann::json::array() : curve_json(v.curves.front());  // the first seed's
    if (!r.seeds.empty()) {
      for (const auto& [key, spread] : {std::pair<const char*, const Spread*>{"bleu", &r.bleu_spread},
                                        {"chrf", &r.chrf_spread},
                                        {"valid_ppl", &r.ppl_spread},
                                        {"aer", &r.aer_spread}}) {
        row[std::string(key) + "_sd"] = number_or_null(spread->sd);
        row[std::string(key) + "_min"] = number_or_null(spread->min);
        row[std::string(key) + "_max"] = number_or_null(spread->max);
      }
      row["seeds"] = nlohmann::json::array();
      for (size_t k = 0; k < r.seeds.size(); ++k) {
        const auto& s = r.seeds[k];
        row["seeds"].push_back({{"seed", s.seed},
                                {"save_dir", s.save_dir},
                                {"bleu", number_or_null(s.bleu)},
                                {"chrf", number_or_null(s.chrf)},
                                {"valid_ppl", number_or_null(s.valid_ppl)},
                                {"aer", number_or_null(s.aer)},
                                {"stream_bleu", number_or_null(s.stream_bleu)},
                                {"stream_laal", number_or_null(s.stream_laal)},
                                {"curve", k < v.curves.size() ? curve_json(v.curves[k]) : nlohmann::json::array()}});
      }
    }
    row["samples"] = v.translations;
    j["variants"].push_back(row);
  }
  return j.dump(2) + "\n";
}

std::string results_html(const CompareReport& report) {
  const auto cols = columns(report);
  std::ostringstream o;
  o << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>attnmt compare: "
    << report.variants.size() << " attention variants</title><style>" << kStyle << "</style></head><body>\n"
    << "<h1>Attention variants compared</h1>\n<p class=\"meta\">Test set <code>" << xml_escape(report.test_src)
    << "</code> (" << report.test_sentences << " sentences), each model's own beam size; BLEU/chrF as sacreBLEU; "
    << "decode speed and peak RSS measured in a separate <code>attnmt translate</code> process (search time only for "
    << "sentences/s); train speed, steps and time from each model's <code>log.jsonl</code>.";
  if (report.seeds > 0) {
    o << " Each config trained with " << report.seeds << " seed" << (report.seeds > 1 ? "s" : "")
      << ": figures are means over them, BLEU/chrF/valid ppl/AER as mean \xC2\xB1 standard deviation (min and max in "
         "results.csv/json); p-values (paired bootstrap, 1,000 resamples, * p &lt; 0.05) compare the outputs of seed "
      << report.significance_seed << " against <code>" << xml_escape(report.baseline) << "</code>.";
  } else if (report.variants.size() > 1) {
    o << " p-values: paired bootstrap (1,000 resamples) against <code>" << xml_escape(report.baseline)
      << "</code>, * p &lt; 0.05.";
  }
  if (!report.gold_links.empty()) {
    o << " AER on <code>" << xml_escape(report.gold_links) << "</code> (" << report.gold_sentences
      << " sentence pairs, force-decoded references, one link per target word at the attention argmax).";
  }
  o << "</p>\n<h2>Results</h2>\n<p class=\"meta\">Click a column heading to sort.</p>\n<table "
       "id=\"results\"><thead><tr>";
  for (const auto& c : cols) o << "<th data-key=\"" << c.key << "\">" << xml_escape(c.header) << "</th>";
  o << "</tr></thead><tbody>\n";
  for (const auto& v : report.variants) {
    o << "<tr data-variant=\"" << xml_escape(v.row.variant) << "\">";
    for (const auto& c : cols) {
      if (c.number) {
        const double x = c.number(v.row);
        o << "<td class=\"num\" data-value=\"" << (std::isfinite(x) ? fixed(x, 6) : "") << "\">"
          << xml_escape(c.text(v.row)) << "</td>";
      } else {
        o << "<td>" << xml_escape(c.text(v.row)) << "</td>";
      }
    }
    o << "</tr>\n";
  }
  o << "</tbody></table>\n";

  // learning curves
  o << "<h2>Learning curves</h2>\n<p class=\"legend\">";
  for (size_t i = 0; i < report.variants.size(); ++i) {
    o << "<span><i style=\"background:" << color_of(i) << "\"></i>" << xml_escape(report.variants[i].row.variant)
      << "</span>";
  }
  o << "</p>\n<div class=\"charts\">\n";
  auto series = [&](const std::function<double(const CurvePoint&)>& x,
                    const std::function<double(const CurvePoint&)>& y) {
    std::vector<Series> all;
    for (size_t i = 0; i < report.variants.size(); ++i) {
      const auto& v = report.variants[i];
      for (size_t k = 0; k < v.curves.size(); ++k) {  // one line per seed, in the variant's colour
        const auto name = v.row.variant + (k < v.row.seeds.size() ? " seed " + std::to_string(v.row.seeds[k].seed) : "");
        Series s{name, color_of(i), {}};
        for (const auto& p : v.curves[k]) s.points.emplace_back(x(p), y(p));
        all.push_back(s);
      }
    }
    return all;
  };
  auto step = [](const CurvePoint& p) { return static_cast<double>(p.step); };
  auto minutes = [](const CurvePoint& p) { return p.minutes; };
  auto bleu = [](const CurvePoint& p) { return p.bleu; };
  auto ppl = [](const CurvePoint& p) { return p.ppl; };
  o << line_chart("valid BLEU vs step", "step", "valid BLEU (greedy)", series(step, bleu)) << "\n"
    << line_chart("valid BLEU vs wall time", "training minutes", "valid BLEU (greedy)", series(minutes, bleu)) << "\n"
    << line_chart("valid perplexity vs step", "step", "valid perplexity (log scale)", series(step, ppl), true) << "\n"
    << line_chart("valid perplexity vs wall time", "training minutes", "valid perplexity (log scale)",
                  series(minutes, ppl), true)
    << "\n</div>\n";

  if (report.streaming) {
    // One point per variant and seed: where the models of several families lie against each other.
    std::vector<Series> points;
    for (size_t i = 0; i < report.variants.size(); ++i) {
      const auto& r = report.variants[i].row;
      if (r.seeds.empty()) {
        points.push_back({r.variant, color_of(i), {{r.stream_laal, r.stream_bleu}}});
        continue;
      }
      for (const auto& s : r.seeds) {
        points.push_back({r.variant + " seed " + std::to_string(s.seed), color_of(i), {{s.stream_laal, s.stream_bleu}}});
      }
    }
    o << "<h2>Quality and latency, streamed</h2>\n<p class=\"meta\">The test set streamed by each model's own policy "
         "(<code>attnmt translate --streaming</code> with the config's <code>decode.*</code>): BLEU against LAAL in "
         "source words, as SimulEval computes it; one point per variant and seed, coloured as above; a model without a "
         "streaming policy has none.</p>\n"
      << line_chart("streamed BLEU vs LAAL", "LAAL (source words)", "BLEU, streamed", points, false,
                    "no model streamed", /*labelled=*/true)
      << "\n";
  }

  if (!report.gold_links.empty()) o << "<h2>Alignment error rate</h2>\n" << aer_bars(report) << "\n";

  o << "<h2>Attention</h2>\n<p class=\"meta\">Each variant's attention while translating the same test sentences "
       "(beam as configured), merged from subwords to words: rows are the words it produced, columns the source "
       "words; white = 0, dark blue = 1.</p>\n";
  for (size_t k = 0; k < report.sample_sources.size(); ++k) {
    o << "<section class=\"sample\" data-sentence=\"" << k << "\"><h3>Sentence " << k + 1 << "</h3>"
      << "<p><b>source:</b> " << xml_escape(report.sample_sources[k]) << "</p>";
    if (k < report.sample_references.size()) {
      o << "<p><b>reference:</b> " << xml_escape(report.sample_references[k]) << "</p>";
    }
    o << "<div class=\"maps\">\n";
    for (const auto& v : report.variants) {
      if (k >= v.heatmaps.size()) continue;
      o << "<figure class=\"map\"><figcaption>" << xml_escape(v.row.variant) << " <span class=\"meta\">("
        << xml_escape(v.row.attention) << ")</span></figcaption>"
        << heatmap_svg(v.heatmaps[k], "class=\"heatmap\" data-variant=\"" + xml_escape(v.row.variant) +
                                          "\" data-sentence=\"" + std::to_string(k) + "\"")
        << "<p class=\"hyp\">" << xml_escape(k < v.translations.size() ? v.translations[k] : "") << "</p></figure>\n";
    }
    o << "</div></section>\n";
  }
  o << "<p class=\"meta\">Written by <code>attnmt compare</code>" << (report.created.empty() ? "" : ", ")
    << xml_escape(report.created) << ".</p>\n<script>" << kScript << "</script>\n</body></html>\n";
  return o.str();
}

}  // namespace attnmt
