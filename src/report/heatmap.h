// Attention heatmaps: source words along the top (x), target words down the left side (y), one
// cell per (target, source) weight, white (0) to dark blue (1). SVG is written here by hand;
// PNG is drawn with cairo (Debian libcairo2-dev; attnmt builds without it, and PNG output then
// fails with a message saying so).
#pragma once
#include <string>
#include <vector>

namespace attnmt {

struct Heatmap {
  std::vector<std::string> src_words;       // columns
  std::vector<std::string> tgt_words;       // rows
  std::vector<std::vector<float>> weights;  // [tgt][src], 0..1
  std::string title;                        // optional, drawn above
};

// A standalone <svg> element (valid as a file and inline in HTML). `attributes` is added to the
// <svg> tag as is (e.g. class="heatmap" data-variant="x").
std::string heatmap_svg(const Heatmap& map, const std::string& attributes = "");

bool png_supported();
// RuntimeError if attnmt was built without cairo or the file cannot be written.
void write_heatmap_png(const Heatmap& map, const std::string& path);

// By the extension of `path`: .svg or .png; InputError for another one.
void write_heatmap(const Heatmap& map, const std::string& path);

// Escapes & < > " ' for XML/HTML text and attribute values.
std::string xml_escape(const std::string& text);

}  // namespace attnmt
