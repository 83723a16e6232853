#include "compiler/target/Attention.h"

#include <algorithm>
#include <stdexcept>

namespace kiln::target {

namespace {

std::vector<int64_t> identityOr(const std::vector<int64_t> &perm, size_t rank) {
  if (!perm.empty()) {
    std::vector<int64_t> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (size_t k = 0; k < sorted.size(); ++k)
      if (sorted[k] != int64_t(k)) throw std::invalid_argument("attention: bad permutation");
    if (perm.size() != rank) throw std::invalid_argument("attention: permutation of the wrong rank");
    return perm;
  }
  std::vector<int64_t> p(rank);
  for (size_t k = 0; k < rank; ++k) p[k] = int64_t(k);
  return p;
}

std::vector<int64_t> permuted(const std::vector<int64_t> &v, const std::vector<int64_t> &perm) {
  std::vector<int64_t> r(perm.size());
  for (size_t k = 0; k < perm.size(); ++k) r[k] = v.at(size_t(perm[k]));
  return r;
}

// Batch strides of an operand whose logical dims (and their memory strides) end with two matrix
// dims, right-aligned to `batch` (0 where it broadcasts).
std::vector<int64_t> batchStrides(const std::vector<int64_t> &dims, const std::vector<int64_t> &strides,
                                  const std::vector<int64_t> &batch) {
  std::vector<int64_t> r(batch.size(), 0);
  size_t nb = dims.size() - 2, off = batch.size() - nb;
  for (size_t d = 0; d < nb; ++d)
    if (dims[d] != 1) r[off + d] = strides[d];
  return r;
}

}  // namespace

AttentionSpec attentionSpec(const AttentionOperand &qo, const AttentionOperand &ko, const AttentionOperand &vo,
                            const std::vector<int64_t> &permY) {
  // Logical Q [.., Sq, D], Kᵀ [.., D, Sk], V [.., Sk, Dv] and their memory strides.
  auto read = [](const AttentionOperand &o, std::vector<int64_t> &dims, std::vector<int64_t> &strides) {
    if (o.shape.size() < 2) throw std::invalid_argument("attention: Q, K and V must have rank >= 2");
    if (!o.strides.empty() && o.strides.size() != o.shape.size())
      throw std::invalid_argument("attention: one stride per dim");
    auto p = identityOr(o.perm, o.shape.size());
    dims = permuted(o.shape, p);
    strides = permuted(o.strides.empty() ? contiguousStrides(o.shape) : o.strides, p);
  };
  std::vector<int64_t> q, qs, k, ks, v, vs;
  read(qo, q, qs);
  read(ko, k, ks);
  read(vo, v, vs);
  AttentionSpec s;
  s.Sq = q[q.size() - 2], s.D = q.back(), s.Sk = k.back(), s.Dv = v.back();
  if (k[k.size() - 2] != s.D || v[v.size() - 2] != s.Sk)
    throw std::invalid_argument("attention: Q·Kᵀ and V do not chain");
  if (qs.back() != 1 || ks[ks.size() - 2] != 1 || vs.back() != 1)
    throw std::invalid_argument("attention: Q, K and V must be contiguous along the head dim");
  s.batchShape =
      broadcastShapes({std::vector<int64_t>(q.begin(), q.end() - 2), std::vector<int64_t>(k.begin(), k.end() - 2),
                       std::vector<int64_t>(v.begin(), v.end() - 2)});
  s.q = {batchStrides(q, qs, s.batchShape), qs[qs.size() - 2], qo.offset};
  s.k = {batchStrides(k, ks, s.batchShape), ks.back(), ko.offset};
  s.v = {batchStrides(v, vs, s.batchShape), vs[vs.size() - 2], vo.offset};
  // Y: the logical result [batch..., Sq, Dv] stored as Transpose(result, perm_y).
  std::vector<int64_t> logical = s.batchShape;
  logical.push_back(s.Sq);
  logical.push_back(s.Dv);
  auto py = identityOr(permY, logical.size());
  std::vector<int64_t> stored = contiguousStrides(permuted(logical, py)), ys(logical.size());
  for (size_t d = 0; d < py.size(); ++d) ys[size_t(py[d])] = stored[d];
  if (ys.back() != 1) throw std::invalid_argument("attention: the result must stay contiguous along the head dim");
  s.y = {batchStrides(logical, ys, s.batchShape), ys[ys.size() - 2]};
  return s;
}

std::string attentionUnsupported(const AttentionSpec &s) {
  if (s.type != ElemType::F16 && s.type != ElemType::BF16) return "only fp16 and bf16";
  if (s.D % 8 || s.Dv % 8 || s.D > 128 || s.Dv > 128 || s.D < 8 || s.Dv < 8)
    return "head sizes must be multiples of 8 up to 128";
  if (s.Sq < 1 || s.Sk < 1) return "empty sequences";
  for (const AttentionSpec::View *v : {&s.q, &s.k, &s.v}) {
    if (v->rowStride % 8 || v->offset % 8) return "offsets and row strides must be multiples of 8";
    if (v->batchStrides.size() != s.batchShape.size()) return "one batch stride per batch dim";
    for (int64_t b : v->batchStrides)
      if (b % 8) return "batch strides must be multiples of 8";
  }
  if (s.y.rowStride % 2 || s.y.offset % 2 || s.y.batchStrides.size() != s.batchShape.size())
    return "bad result strides";
  for (int64_t b : s.y.batchStrides)
    if (b % 2) return "bad result strides";
  if (s.hasMask && !isFloatType(s.maskType)) return "the mask must be a float tensor";
  if (s.rowsPerBlock != 64 && s.rowsPerBlock != 128) return "64 or 128 query rows per block";
  if (s.causal && s.diagonal < 0) return "a causal diagonal below 0 (rows that see no key)";
  if (s.keySplit != 1 && s.keySplit != 2) return "a key split of 1 or 2";
  return "";
}

}  // namespace kiln::target
