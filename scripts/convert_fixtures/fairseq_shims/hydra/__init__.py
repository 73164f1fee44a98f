# A stand-in for hydra-core (not in Debian), enough for fairseq's argparse entry points
# (fairseq-preprocess, fairseq-train, fairseq-generate): its ConfigStore records the dataclasses
# fairseq registers, and experimental.compose builds the config from them and the overrides that
# fairseq.dataclass.utils.convert_namespace_to_omegaconf passes, as hydra's compose would.
# hydra.main (fairseq-hydra-train) is not provided.
def main(*args, **kwargs):
    raise RuntimeError("hydra shim: hydra.main is not provided (use fairseq's argparse entry points)")
