// The files the source toolkits write, read without Python (src/pyformat/): what the model
// readers (opennmt.cpp, joeynmt.cpp) need of them, as plain values and LibTorch tensors.
#pragma once
#include <torch/torch.h>

#include <map>
#include <string>
#include <vector>

#include "config/option_tree.h"
#include "convert/convert.h"
#include "pyformat/pickle.h"

namespace attnmt {

struct OpenNMTCheckpoint {
  std::string version;    // "OpenNMT-py 1.x" | "OpenNMT-py 2.x" | "OpenNMT-py 3.x"
  int major_version = 2;  // the version's number: 3.x decodes by other defaults and rules
  ToolkitOptions opt;   // the checkpoint's 'opt' (its argparse.Namespace)
  std::vector<std::string> src_tokens, tgt_tokens;
  SpecialIds src_specials, tgt_specials;
  int source_features = 0;                       // word features besides the tokens
  std::map<std::string, torch::Tensor> weights;  // read_opennmt_weights: 'model' and 'generator' (prefixed "generator.")
  // Where the weights are: the checkpoint's own object, or the safetensors file(s) beside it.
  PyValue root;
  std::string pt_file, weights_file;
};

// `path`: a .pt (2.x, or 3.x with its weights inside or in the .safetensors of the same name
// beside it) or a 3.x .safetensors (its .pt beside it). InputError naming the file otherwise.
// The options and vocabularies only: read_opennmt_weights then reads the weights (once the
// options have been found convertible).
OpenNMTCheckpoint read_opennmt_checkpoint(const std::string& path);
void read_opennmt_weights(OpenNMTCheckpoint& checkpoint);

// A fairseq checkpoint (checkpoint_best.pt, checkpoint_last.pt, ...): its options and weights.
struct FairseqCheckpoint {
  // The model's options: cfg.model (an argparse.Namespace for the argparse-only architectures, the
  // lstm family among them; a dict for dataclass ones), or the flat 'args' of fairseq < 0.10.
  ToolkitOptions model;
  ToolkitOptions task;       // cfg.task (or 'args'): source_lang, target_lang, left_pad_source, ...
  std::string criterion;     // cfg.criterion._name (or args.criterion): adaptive_loss means adaptive softmax
  std::map<std::string, torch::Tensor> weights;  // 'model'
};
FairseqCheckpoint read_fairseq_checkpoint(const std::string& path);

// The tensors of a torch.save'd dict's entry `key` (a state dict), float32 on the CPU.
std::map<std::string, torch::Tensor> read_state_dict(const std::string& path, const std::string& key);

}  // namespace attnmt
