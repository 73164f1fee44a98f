def __getattr__(name):  # any metric: imported by fairseq's non-text tasks, never called here
    def unavailable(*args, **kwargs):
        raise RuntimeError("sklearn shim: sklearn.metrics." + name + " is not available")
    return unavailable
