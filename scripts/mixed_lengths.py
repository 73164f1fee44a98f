#!/usr/bin/env python3
"""Sentences of mixed lengths for the serving benchmarks (load_test.sh, bench_batching.sh): the
words of a text (stdin) as one running text, cut into N sentences of 1 to 60 words drawn
uniformly (seeded, so every run sends the same ones).
  zcat test.de.gz | mixed_lengths.py N > sentences.txt"""
import random
import sys

words = sys.stdin.read().split()
rng = random.Random(85)
at = 0
for _ in range(int(sys.argv[1])):
    n = rng.randint(1, 60)
    print(" ".join(words[(at + i) % len(words)] for i in range(n)))
    at += n
