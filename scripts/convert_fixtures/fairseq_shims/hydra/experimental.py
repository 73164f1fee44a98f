# compose(): fairseq/config/config.yaml's defaults (criterion cross_entropy, lr_scheduler fixed,
# the other groups null), then the overrides in order: "group=name" puts the dataclass registered
# as group/name there; "a.b=value" sets a value (hydra's grammar for what fairseq writes: null,
# quoted strings, numbers, booleans, lists).
import contextlib
import dataclasses

import yaml
from omegaconf import OmegaConf, open_dict

from hydra.core.config_store import ConfigStore

_DEFAULTS = {"task": None, "model": None, "criterion": "cross_entropy", "optimizer": None,
             "lr_scheduler": "fixed", "bpe": None, "tokenizer": None, "scoring": None,
             "generation": None, "common_eval": None, "eval_lm": None}


@contextlib.contextmanager
def initialize(config_path=None, **kwargs):
    yield


def _node(group, name):
    node = ConfigStore.instance().repo.get((group, name))
    if node is None:
        return None
    if dataclasses.is_dataclass(node):
        return OmegaConf.structured(node)
    return OmegaConf.create(node)


def _value(text):
    if text.startswith("'") and text.endswith("'") and len(text) >= 2:
        return text[1:-1].replace("\\'", "'")
    if text == "null":
        return None
    return yaml.safe_load(text)


def compose(config_name="config", overrides=(), strict=None, **kwargs):
    cfg = _node(None, config_name)
    OmegaConf.set_struct(cfg, False)
    for group, name in _DEFAULTS.items():
        if name is not None:
            with open_dict(cfg):
                cfg[group] = _node(group, name)
    for override in overrides:
        key, _, text = override.partition("=")
        if "." not in key:
            with open_dict(cfg):
                cfg[key] = None if text == "null" else _node(key, text)
            continue
        with open_dict(cfg):
            OmegaConf.update(cfg, key, _value(text), merge=True, force_add=True)
    return cfg
