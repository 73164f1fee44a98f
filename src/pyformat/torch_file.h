// Checkpoints written by Python's torch.save (OpenNMT-py, Joey NMT), read without Python or
// LibTorch: the object torch.save was given as a PyValue tree (pickle.h) whose tensors are
// TensorRefs over the file's bytes (tensor_ref.h). Both of torch.save's formats:
//   zip     (torch >= 1.6): a ZIP archive of stored entries, <name>/data.pkl (the object, protocol
//           2, with each storage a persistent id) and <name>/data/<key> (each storage's bytes);
//   legacy  (torch < 1.6, or _use_new_zipfile_serialization=False): five pickles in a row (magic
//           number, protocol version 1001, sys_info, the object, the storage keys), then each
//           storage as an 8-byte element count and its bytes.
// Tensors come from torch._utils._rebuild_tensor / _v2 / _v3 and nn.Parameters from
// _rebuild_parameter(_with_state); tensor subclasses (torch._tensor._rebuild_from_type_v2) load as
// their tensor. Everything in the file is checked: every problem is an InputError naming it.
#pragma once
#include <string>

#include "pyformat/pickle.h"

namespace attnmt {

enum class TorchFormat { Zip, Legacy };

struct TorchFile {
  TorchFormat format = TorchFormat::Zip;
  PyValue object;  // what torch.save was given (a checkpoint: usually a dict)
};

// "<path>: not a PyTorch checkpoint (...)" for a file torch.save did not write (a text file, a
// safetensors file, a plain pickle); the reason otherwise.
TorchFile load_torch_file(const std::string& path);

// The same for a checkpoint already in memory; `name` stands for the file in messages.
TorchFile load_torch_bytes(std::string bytes, const std::string& name);

}  // namespace attnmt
