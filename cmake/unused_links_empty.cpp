// The empty library loaded in place of each library LibTorch links but never calls
// (cmake/unused_links.py, cmake/torch_trim.cmake): it defines nothing, on purpose.
