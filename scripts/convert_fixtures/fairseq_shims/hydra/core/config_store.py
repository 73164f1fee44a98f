class ConfigStore:
    """Records cs.store(name=, group=, node=): what compose() builds the config from."""

    _instance = None

    def __init__(self):
        self.repo = {}

    @classmethod
    def instance(cls):
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    def store(self, name, node, group=None, package=None, provider=None):
        self.repo[(group, name)] = node
