// The attentional decoder, in the three styles of docs/attention.md:
//  luong    (Luong et al., 2015): s_t = RNN(s_{t-1}, [E y_{t-1}; h~_{t-1}]) (input feeding),
//           query = s_t, h~_t = tanh(W_c [c_t; s_t]).
//  bahdanau (Bahdanau et al., 2015): query = s_{t-1}, c_t first, then
//           s_t = RNN(s_{t-1}, [E y_{t-1}; c_t]), h~_t = tanh(W_o [s_t; c_t; E y_{t-1}]).
//  conditional (Sennrich et al., 2017, Nematus' cGRU; Marian's s2s): the attention between two
//           cells of one layer, s'_t = RNN_1(s_{t-1}, E y_{t-1}), query = s'_t,
//           s_t = RNN_2(s'_t, c_t), then model.decoder.transitions cells without input
//           (s_t = RNN_k(s_t, -): their input gates are their bias alone); layers 2.. of
//           model.decoder.layers are an ordinary stack over s_t, and h~_t = tanh(W_o [s_t; c_t;
//           E y_{t-1}] + b) from its top.
// Each returns the "attentional hidden" h~_t [N, C] (C = model.decoder.combine_size, else H) that
// the output layer turns into logits.
// The initial state comes from the encoder's final state as model.decoder.init says (attnmt's own:
// a tanh bridge; the others are the forms of the toolkits whose models attnmt converts).
// model.decoder.self_attention adds intra-decoder attention (Paulus et al. 2017, 2.2): the RNN
// output s_t attends over s_1..s_{t-1}, e_{t,t'} = s_t . W_d s_t', and that context c^d_t (0 at
// the first step) joins the input of the layer that makes h~_t.
#pragma once
#include <torch/torch.h>

#include <memory>

#include "attention/attention.h"
#include "config/config.h"
#include "model/encoder.h"
#include "model/rnn_stack.h"

namespace attnmt {

struct DecoderStepState {
  RnnState rnn;
  torch::Tensor feed;  // [N, H] h~_{t-1} (luong with input feeding), else undefined
  AttentionState attention;
  // model.decoder.self_attention: W_d s_t' and s_t' of the steps so far [N, t, H] (undefined
  // before the first step)
  torch::Tensor past_keys, past_states;

  DecoderStepState index_select(const torch::Tensor& index) const;
  // This state with rows `rows` [R] (int64) taken from `from`, a state of the same rows and
  // shapes (the same batch a step earlier); not with self-attention's past.
  DecoderStepState with_rows_of(const DecoderStepState& from, const torch::Tensor& rows) const;
  // b's rows after a's (continuous batching), their attention states already of one memory length
  // (Attention::cat_states); neither with self-attention's past, which is as long as its step.
  static DecoderStepState cat(const DecoderStepState& a, const DecoderStepState& b, AttentionState attention);
};

// The decoder's products in one execution mode (model/product.h).
struct DecoderProducts {
  RnnProducts rnn;
  std::unique_ptr<Product> combine;  // luong: W_c; bahdanau, conditional: W_o
  // conditional: RNN_2 (its input c_t), each transition's recurrent product, the layers above
  RnnProducts second;
  std::vector<std::unique_ptr<Product>> transitions;
  RnnProducts above;
};

class DecoderImpl : public torch::nn::Module {
 public:
  DecoderImpl(const ModelConfig& config, int64_t memory_size);

  DecoderStepState initial_state(const EncoderOutput& encoded, const AttentionMemory& memory);
  // [..., E] -> [..., G]: the embedding part of the first RNN layer's gates, for many steps at once.
  torch::Tensor project_embeddings(const torch::Tensor& embedded, const DecoderProducts& products) const {
    return rnn_->project_static(embedded, products.rnn);
  }
  // One step t (0-based). gates_t = project_embeddings(E y_{t-1}) [N, G], embedded_t [N, E].
  // Returns h~_t [N, H]; weights (if not null) receives alpha_t [N, S].
  torch::Tensor step(const torch::Tensor& gates_t, const torch::Tensor& embedded_t,
                     const AttentionMemory& memory, DecoderStepState& state, int64_t t,
                     torch::Tensor* weights, const DecoderProducts& products);
  // The products in `mode` on the current weights (stale once they change).
  DecoderProducts products(ExecutionMode mode) const;
  // Training's products for one forward pass (RnnStack::training_products).
  DecoderProducts training_products() const;

  Attention& attention() { return *attention_; }
  const Attention& attention() const { return *attention_; }
  // The size of h~_t: model.decoder.combine_size, else the hidden size.
  int64_t output_size() const {
    return config_.decoder.combine_size > 0 ? config_.decoder.combine_size : config_.decoder.hidden_size;
  }

 private:
  ModelConfig config_;
  bool luong_, conditional_;
  RnnStack rnn_{nullptr};  // conditional: RNN_1 alone
  // conditional: RNN_2, the transitions' weights (w_hh [G, H], b_ih and b_hh [G] each), the layers above
  RnnStack second_{nullptr}, above_{nullptr};
  std::vector<torch::Tensor> transition_w_hh_, transition_b_ih_, transition_b_hh_;
  std::shared_ptr<Attention> attention_;
  torch::nn::Linear bridge_h_{nullptr}, bridge_c_{nullptr};  // init bridge (c: LSTM only) and tanh_bridge (h)
  torch::nn::Linear relu_bridge_h_{nullptr}, relu_bridge_c_{nullptr};  // init encoder_relu_bridge
  torch::nn::Linear linear_bridge_h_{nullptr}, linear_bridge_c_{nullptr};  // init encoder_linear
  torch::nn::Linear mean_bridge_{nullptr};  // init mean_bridge
  torch::nn::Linear combine_{nullptr};  // luong: W_c; bahdanau, conditional: W_o (no bias, as in the papers)
  torch::nn::Linear intra_{nullptr};    // W_d of the decoder self-attention (none without it)
  // c^d_t for the RNN output s [N, H]; s then joins the state's history.
  torch::Tensor intra_context(const torch::Tensor& s, DecoderStepState& state);
  torch::Tensor combine_bias() const { return config_.decoder.combine_bias ? combine_->bias : torch::Tensor(); }
  torch::Tensor combine_activation(const torch::Tensor& x) const {
    return config_.decoder.combine_tanh ? torch::tanh(x) : x;
  }
  // OpenNMT-py's bridge on every layer's final states x [layers] x [B, D*h] (D directions).
  std::vector<torch::Tensor> relu_bridge(torch::nn::Linear linear, const std::vector<torch::Tensor>& x) const;
  // The conditional style's recurrence: the top layer's s_t from RNN_1's input gates; the attention's
  // output (c_t, its weights) into att.
  torch::Tensor conditional_step(const torch::Tensor& gates_t, const AttentionMemory& memory, DecoderStepState& state,
                                 int64_t t, AttentionOutput& att, const DecoderProducts& products);
};
TORCH_MODULE(Decoder);

}  // namespace attnmt
