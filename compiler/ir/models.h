#pragma once
// Built-in model generators: the compute graphs of well-known networks written as tensor
// expressions (see docs/workload.md for what each one models, its defaults and parameter count).
//
//   bert-large   24 post-LN encoder layers, hidden 1024, 16 heads, FFN 4096 (seq default 128)
//   vit-base     ViT-B/16 on 224x224x3: patch embedding, 197 tokens, 12 layers, head 1000
//   resnet-18    224x224x3, BN folded into conv bias, basic blocks, avg pool, FC 1000
//   nerf         MLP 63 -> 128 -> 128 -> 4 over batch x 1024 samples
//   opt-1.3b / opt-6.7b / opt-13b        pre-LN decoder layers (default 1 layer, seq 512)
//   llama2-7b / llama2-13b               SwiGLU decoder layers (default 1 layer, seq 512)
//   retnet-1.3b                          multi-scale retention layers (default 1 layer, seq 512)
//
// Every model reads one input tensor (role Input) and declares its parameters as Weight tensors;
// all tensors are fp16. Operator names are their output tensors' names, e.g. `l3.attn.q`.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "compiler/ir/graph.h"

namespace tessera::ir {

struct ModelOptions {
  std::int64_t batch = 1;
  std::int64_t seq_len = 0;  // 0 = model default; tokens (transformers) or samples per batch (nerf)
  std::int64_t layers = 0;   // 0 = model default; layers (transformers) or hidden layers (nerf)
  std::map<std::string, std::int64_t> dims;  // ONNX models only: symbolic input dimensions (--dim)
  bool keep_values = false;                  // ONNX models only: keep weight values (functional mode)
};

// Every built-in model name, sorted.
std::vector<std::string> model_names();
bool is_model_name(const std::string& name);

// Builds and finalizes the model. Throws tessera::Error naming the model on an unknown name
// (listing the valid ones) or on options out of range (batch 1..1024, seq_len 0..16384,
// layers 0..256; seq_len / layers that a model does not have must be 0).
Workload build_model(const std::string& name, const ModelOptions& opt = {});

}  // namespace tessera::ir
