def get_args(*args, **kwargs):
    raise RuntimeError("hydra shim: no hydra command line")
