class GlobalHydra:
    @classmethod
    def instance(cls):
        return cls()

    def clear(self):
        pass
