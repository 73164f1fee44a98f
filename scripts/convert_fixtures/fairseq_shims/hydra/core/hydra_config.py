class HydraConfig:
    @classmethod
    def initialized(cls):
        return False
