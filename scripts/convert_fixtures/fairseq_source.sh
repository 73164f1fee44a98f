# Sourced by fairseq_fixtures.sh and fairseq_fullsize.sh: fairseq's public source from its bare
# mirror, made to load on Debian bookworm's Python 3.11 and python3-torch.
#   fairseq_source MIRRORS DIR   (does nothing if DIR/fairseq is there)
fairseq_source() {
  local mirrors=$1 dir=$2 shims
  shims=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fairseq_shims
  [ -d "$dir/fairseq" ] && return 0
  mkdir -p "$dir"
  git --git-dir="$mirrors/facebookresearch+fairseq/repo" archive HEAD | tar -x -C "$dir"
  git --git-dir="$mirrors/facebookresearch+fairseq/repo" rev-parse HEAD > "$dir/COMMIT"
  # Python 3.11 refuses dataclass fields with mutable (dataclass instance) defaults.
  sed -i -E 's/^(\s+\w+): (\w+Config) = \2\(\)$/\1: \2 = field(default_factory=\2)/' \
    "$dir/fairseq/dataclass/configs.py" "$dir/fairseq/models/transformer/transformer_config.py"
  sed -i 's/field(default=QuantNoiseConfig())/field(default_factory=QuantNoiseConfig)/' \
    "$dir/fairseq/models/transformer/transformer_config.py"
  # Its two Cython extensions, built in place.
  (cd "$dir" && /usr/bin/python3 "$shims/build_ext.py" build_ext --inplace > build_ext.log 2>&1)
}
