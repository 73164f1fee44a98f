# Builds fairseq's two Cython extensions and libbleu (fairseq-generate's default BLEU scorer) in
# place (run in its source directory); not its C++/CUDA torch extensions.
from setuptools import setup, Extension
from Cython.Build import cythonize
import numpy

cython = [Extension(n, sources=[s], language="c++", include_dirs=[numpy.get_include()], extra_compile_args=["-std=c++11", "-O2"])
          for n, s in [("fairseq.data.data_utils_fast", "fairseq/data/data_utils_fast.pyx"),
                       ("fairseq.data.token_block_utils_fast", "fairseq/data/token_block_utils_fast.pyx")]]
libbleu = Extension("fairseq.libbleu", sources=["fairseq/clib/libbleu/libbleu.cpp", "fairseq/clib/libbleu/module.cpp"],
                    extra_compile_args=["-std=c++11", "-O2"])
setup(name="fairseq_ext", ext_modules=cythonize(cython, language_level=3) + [libbleu])
