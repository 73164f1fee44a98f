# fairseq.tasks.audio_classification imports sklearn.metrics at import time; the text tasks
# never call it.
