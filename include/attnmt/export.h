// ATTNMT_API marks what libattnmt.so exports: the library is compiled with hidden visibility, and
// everything of LibTorch, SentencePiece and attnmt's internals stays inside it.
#pragma once

#if defined(_WIN32)
#define ATTNMT_API
#else
#define ATTNMT_API __attribute__((visibility("default")))
#endif
