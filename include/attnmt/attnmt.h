// attnmt's public C++ API in one include: Translator, score, the version and the errors
// (docs/cpp.md). Link with attnmt::attnmt (CMake: find_package(attnmt CONFIG)) or
// `pkg-config --cflags --libs attnmt`.
#pragma once
#include <attnmt/error.h>
#include <attnmt/score.h>
#include <attnmt/translator.h>
#include <attnmt/version.h>
