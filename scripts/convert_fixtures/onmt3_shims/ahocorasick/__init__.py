"""Empty stand-in for ahocorasick: imported at module level by an OpenNMT-py 3.5.1 transform
(onmt/transforms/*) that every `import onmt` loads; never used by the fixtures."""
