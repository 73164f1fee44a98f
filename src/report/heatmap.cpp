#include "report/heatmap.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <functional>

#include "util/error.h"
#include "util/text_io.h"
#include "util/utf8.h"

#ifdef ATTNMT_WITH_CAIRO
#include <cairo.h>
#endif

namespace attnmt {
namespace {

constexpr double kCell = 20;      // px per cell
constexpr double kFontSize = 11;  // px
constexpr double kPad = 6;        // between labels and cells
constexpr double kMargin = 8;
constexpr double kTitleHeight = 20;

// Positions of everything, given how wide a label is drawn.
struct Layout {
  double left = 0, top = 0, width = 0, height = 0;
  size_t rows = 0, cols = 0;
};

Layout layout(const Heatmap& map, const std::function<double(const std::string&)>& text_width) {
  Layout l;
  l.rows = map.tgt_words.size();
  l.cols = map.src_words.size();
  double max_tgt = 0, max_src = 0;
  for (const auto& w : map.tgt_words) max_tgt = std::max(max_tgt, text_width(w));
  for (const auto& w : map.src_words) max_src = std::max(max_src, text_width(w));
  const double title = map.title.empty() ? 0 : kTitleHeight;
  l.left = kMargin + max_tgt + kPad;
  l.top = kMargin + title + max_src + kPad;
  l.width =
      std::max(l.left + l.cols * kCell + kMargin, map.title.empty() ? 0.0 : 2 * kMargin + text_width(map.title) * 1.1);
  l.height = l.top + l.rows * kCell + kMargin;
  return l;
}

float weight(const Heatmap& map, size_t r, size_t c) {
  if (r >= map.weights.size() || c >= map.weights[r].size()) return 0.f;
  const float v = map.weights[r][c];
  return std::isfinite(v) ? std::clamp(v, 0.f, 1.f) : 0.f;
}

// white (0) -> dark blue (1)
void color(float v, int* r, int* g, int* b) {
  *r = static_cast<int>(std::lround(255 + v * (8 - 255)));
  *g = static_cast<int>(std::lround(255 + v * (48 - 255)));
  *b = static_cast<int>(std::lround(255 + v * (107 - 255)));
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string heatmap_svg(const Heatmap& map, const std::string& attributes) {
  // label widths estimated from the character count (sans-serif averages ~0.6 em)
  const auto l = layout(map, [](const std::string& s) { return 0.62 * kFontSize * utf8_characters(s); });
  std::string svg = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt(l.width) + "\" height=\"" +
                    fmt(l.height) + "\" viewBox=\"0 0 " + fmt(l.width) + " " + fmt(l.height) + "\"" +
                    (attributes.empty() ? "" : " " + attributes) +
                    " font-family=\"DejaVu Sans, Verdana, sans-serif\" font-size=\"" + fmt(kFontSize) + "\">\n";
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"#fff\"/>\n";
  if (!map.title.empty()) {
    svg += "<text x=\"" + fmt(kMargin) + "\" y=\"" + fmt(kMargin + 12) + "\" font-weight=\"bold\">" +
           xml_escape(map.title) + "</text>\n";
  }
  for (size_t c = 0; c < l.cols; ++c) {
    const double x = l.left + (c + 0.5) * kCell + 4, y = l.top - kPad;
    svg += "<text class=\"src\" transform=\"translate(" + fmt(x) + "," + fmt(y) + ") rotate(-90)\">" +
           xml_escape(map.src_words[c]) + "</text>\n";
  }
  for (size_t r = 0; r < l.rows; ++r) {
    svg += "<text class=\"tgt\" x=\"" + fmt(l.left - kPad) + "\" y=\"" + fmt(l.top + (r + 0.5) * kCell + 4) +
           "\" text-anchor=\"end\">" + xml_escape(map.tgt_words[r]) + "</text>\n";
  }
  for (size_t r = 0; r < l.rows; ++r) {
    for (size_t c = 0; c < l.cols; ++c) {
      const float v = weight(map, r, c);
      int red, green, blue;
      color(v, &red, &green, &blue);
      char cell[256];
      std::snprintf(cell, sizeof(cell),
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.0f\" height=\"%.0f\" "
                    "fill=\"rgb(%d,%d,%d)\"><title>%.3f</title></rect>\n",
                    l.left + c * kCell, l.top + r * kCell, kCell, kCell, red, green, blue, v);
      svg += cell;
    }
  }
  svg += "<rect x=\"" + fmt(l.left) + "\" y=\"" + fmt(l.top) + "\" width=\"" + fmt(l.cols * kCell) + "\" height=\"" +
         fmt(l.rows * kCell) + "\" fill=\"none\" stroke=\"#888\"/>\n</svg>\n";
  return svg;
}

#ifdef ATTNMT_WITH_CAIRO
bool png_supported() { return true; }

void write_heatmap_png(const Heatmap& map, const std::string& path) {
  // measure with cairo itself on a scratch surface, then draw at 2x for sharp text
  constexpr double kScale = 2;
  auto* scratch_surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, 1, 1);
  auto* scratch = cairo_create(scratch_surface);
  cairo_select_font_face(scratch, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(scratch, kFontSize);
  const auto l = layout(map, [&](const std::string& s) {
    cairo_text_extents_t e;
    cairo_text_extents(scratch, s.c_str(), &e);
    return e.x_advance;
  });
  cairo_destroy(scratch);
  cairo_surface_destroy(scratch_surface);

  auto* surface = cairo_image_surface_create(CAIRO_FORMAT_RGB24, static_cast<int>(std::ceil(l.width * kScale)),
                                             static_cast<int>(std::ceil(l.height * kScale)));
  auto* cr = cairo_create(surface);
  cairo_scale(cr, kScale, kScale);
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, kFontSize);
  cairo_set_source_rgb(cr, 0, 0, 0);
  if (!map.title.empty()) {
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
    cairo_move_to(cr, kMargin, kMargin + 12);
    cairo_show_text(cr, map.title.c_str());
    cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  }
  for (size_t c = 0; c < l.cols; ++c) {
    cairo_save(cr);
    cairo_move_to(cr, l.left + (c + 0.5) * kCell + 4, l.top - kPad);
    cairo_rotate(cr, -M_PI / 2);
    cairo_show_text(cr, map.src_words[c].c_str());
    cairo_restore(cr);
  }
  for (size_t r = 0; r < l.rows; ++r) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, map.tgt_words[r].c_str(), &e);
    cairo_move_to(cr, l.left - kPad - e.x_advance, l.top + (r + 0.5) * kCell + 4);
    cairo_show_text(cr, map.tgt_words[r].c_str());
  }
  for (size_t r = 0; r < l.rows; ++r) {
    for (size_t c = 0; c < l.cols; ++c) {
      int red, green, blue;
      color(weight(map, r, c), &red, &green, &blue);
      cairo_set_source_rgb(cr, red / 255.0, green / 255.0, blue / 255.0);
      cairo_rectangle(cr, l.left + c * kCell, l.top + r * kCell, kCell, kCell);
      cairo_fill(cr);
    }
  }
  cairo_set_source_rgb(cr, 0.53, 0.53, 0.53);
  cairo_set_line_width(cr, 1);
  cairo_rectangle(cr, l.left, l.top, l.cols * kCell, l.rows * kCell);
  cairo_stroke(cr);
  cairo_destroy(cr);
  cairo_surface_flush(surface);
  // through an AtomicFile like every other output; cairo calls back from C, so a write error is
  // kept and thrown once cairo has returned
  AtomicFile file(path);
  struct Sink {
    AtomicFile* file;
    std::exception_ptr error;
  } sink{&file, nullptr};
  const auto status = cairo_surface_write_to_png_stream(
      surface,
      [](void* closure, const unsigned char* data, unsigned int size) {
        auto* sink = static_cast<Sink*>(closure);
        try {
          sink->file->write(data, size);
          return CAIRO_STATUS_SUCCESS;
        } catch (...) {
          sink->error = std::current_exception();
          return CAIRO_STATUS_WRITE_ERROR;
        }
      },
      &sink);
  cairo_surface_destroy(surface);
  if (sink.error) std::rethrow_exception(sink.error);
  if (status != CAIRO_STATUS_SUCCESS) throw RuntimeError("cannot write '" + path + "': " + cairo_status_to_string(status));
  file.commit();
}
#else
bool png_supported() { return false; }

void write_heatmap_png(const Heatmap&, const std::string& path) {
  throw RuntimeError("cannot write '" + path +
                     "': this attnmt was built without cairo (PNG); install libcairo2-dev and rebuild, or write .svg");
}
#endif

void write_heatmap(const Heatmap& map, const std::string& path) {
  auto ends_with = [&](const std::string& ext) {
    if (path.size() < ext.size()) return false;
    std::string tail = path.substr(path.size() - ext.size());
    for (auto& c : tail) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return tail == ext;
  };
  if (ends_with(".svg")) {
    write_file_atomic(path, heatmap_svg(map));
  } else if (ends_with(".png")) {
    write_heatmap_png(map, path);
  } else {
    throw InputError("--output '" + path + "': the extension must be .svg or .png");
  }
}

}  // namespace attnmt
