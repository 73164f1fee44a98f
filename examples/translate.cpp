// Translates stdin with an attnmt model, one sentence per line, as `attnmt translate` does:
//   translate MODEL [BEAM_SIZE] < input.txt > output.txt
// Built against an installed attnmt (examples/CMakeLists.txt; docs/cpp.md).
#include <attnmt/attnmt.h>

#include <iostream>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 2 || argc > 3) {
    std::cerr << "usage: " << argv[0] << " MODEL [BEAM_SIZE] < input > output  (attnmt " << attnmt::version() << ")\n";
    return 2;
  }
  try {
    attnmt::Translator translator(argv[1]);
    attnmt::DecodeOptions options;
    if (argc == 3) options.beam_size = std::stoi(argv[2]);
    std::vector<std::string> lines;
    for (std::string line; std::getline(std::cin, line);) lines.push_back(line);
    for (const auto& hypotheses : translator.translate(lines, options)) std::cout << hypotheses.front().text << '\n';
  } catch (const attnmt::Error& e) {
    std::cerr << argv[0] << ": error: " << e.what() << '\n';
    return e.exit_code();
  } catch (const std::exception& e) {  // std::stoi's
    std::cerr << argv[0] << ": error: " << e.what() << '\n';
    return 2;
  }
}
