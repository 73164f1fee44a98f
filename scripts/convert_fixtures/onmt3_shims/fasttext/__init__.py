"""Empty stand-in for fasttext: imported at module level by OpenNMT-py 3.5.1 code that every
`import onmt` loads; never used by the fixtures."""
