#include "data/memo_encoder.h"

namespace attnmt {

void MemoEncoder::encode(std::string_view line, std::vector<int>& ids) {
  ids.clear();
  size_t at = 0;
  while (at < line.size()) {
    size_t end = line.find(' ', at);
    if (end == std::string_view::npos) end = line.size();
    if (end > at) {
      key_.assign(line.data() + at, end - at);
      auto it = words_.find(key_);
      if (it != words_.end()) {
        ids.insert(ids.end(), it->second.begin(), it->second.end());
      } else {
        auto word = tokenizer_->encode(key_);
        ids.insert(ids.end(), word.begin(), word.end());
        if (words_.size() < max_words_) words_.emplace(key_, std::move(word));
      }
    }
    at = end + 1;
  }
}

bool MemoEncoder::agrees_on(const std::vector<std::string>& lines) {
  std::vector<int> ids;
  for (const auto& line : lines) {
    encode(line, ids);
    if (ids != tokenizer_->encode(line)) return false;
  }
  return true;
}

}  // namespace attnmt
