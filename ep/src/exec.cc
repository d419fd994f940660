// Running a plan: shapes resolved and buffers allocated once per input signature, then the
// host kernels step by step. Inputs are read in place and outputs written in place.
#include <algorithm>
#include <cstring>
#include <utility>

#include "host.h"
#include "plan.h"

namespace onnxrl_ep {

int64_t NumElements(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

namespace {

int64_t NormAxis(int64_t axis, size_t rank, const Step& s) {
  int64_t r = static_cast<int64_t>(rank);
  if (axis < -r || axis >= r) throw Error{"node " + s.node + ": axis " + std::to_string(axis) + " out of range"};
  return axis < 0 ? axis + r : axis;
}

// OuterInner returns the products of shape's dimensions before and after axis ax.
std::pair<int64_t, int64_t> OuterInner(const std::vector<int64_t>& shape, int64_t ax) {
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < static_cast<int64_t>(shape.size()); d++) {
    if (d < ax) outer *= shape[d];
    if (d > ax) inner *= shape[d];
  }
  return {outer, inner};
}

std::vector<int64_t> Strides(const std::vector<int64_t>& shape) {
  std::vector<int64_t> st(shape.size());
  int64_t acc = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

size_t ElemSize(ONNXTensorElementDataType t) { return t == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? 8 : 4; }

}  // namespace

// Infer resolves every value's shape from the inputs' (r.shapes of inputs already set) and
// allocates the buffers of intermediates.
void Executor::Infer(Run& r) {
  const Plan& p = plan_;
  auto& sh = r.shapes;
  for (size_t v = 0; v < p.values.size(); v++)
    if (p.values[v].is_const) sh[v] = p.values[v].c.shape;
  r.sa.assign(p.steps.size(), {});
  r.sb.assign(p.steps.size(), {});
  int64_t scratch = 0;
  // The int64 contents of Shape outputs, for ConstantOfShape.
  std::vector<std::vector<int64_t>> shape_data(p.values.size());
  for (size_t si = 0; si < p.steps.size(); si++) {
    const Step& s = p.steps[si];
    auto in = [&](size_t i) -> const std::vector<int64_t>& { return sh[s.in.at(i)]; };
    auto fail = [&](const std::string& why) { throw Error{"node " + s.node + ": " + why}; };
    for (int v : s.in)
      if (v >= 0 && sh[v].size() > static_cast<size_t>(kMaxRank)) fail("rank above 8");
    switch (s.op) {
      case Op::kDense: {
        const auto& a = in(0);
        if (a.empty() || a.back() != s.K) fail("input's last dimension is not " + std::to_string(s.K));
        auto o = a;
        o.back() = s.N;
        sh[s.out[0]] = o;
        break;
      }
      case Op::kBinary: {
        const auto& a = in(0);
        const auto& b = in(1);
        size_t rank = std::max(a.size(), b.size());
        std::vector<int64_t> o(rank), sa(rank, 0), sb(rank, 0);
        auto sta = Strides(a), stb = Strides(b);
        for (size_t d = 0; d < rank; d++) {
          int64_t da = d + a.size() >= rank ? a[d + a.size() - rank] : 1;
          int64_t db = d + b.size() >= rank ? b[d + b.size() - rank] : 1;
          if (da != db && da != 1 && db != 1) fail("shapes do not broadcast");
          o[d] = da == 1 ? db : da;
          if (da != 1) sa[d] = sta[d + a.size() - rank];
          if (db != 1) sb[d] = stb[d + b.size() - rank];
        }
        sh[s.out[0]] = o;
        r.sa[si] = sa;
        r.sb[si] = sb;
        break;
      }
      case Op::kUnary:
      case Op::kSoftmax:
        sh[s.out[0]] = in(0);
        break;
      case Op::kCopy: {
        const auto& a = in(0);
        std::vector<int64_t> o;
        switch (s.copy) {
          case CopyKind::kIdentity:
            o = a;
            break;
          case CopyKind::kReshape: {
            int64_t known = 1, neg = -1;
            for (size_t i = 0; i < s.ints.size(); i++) {
              int64_t d = s.ints[i];
              if (d == 0 && !s.allowzero) {
                if (i >= a.size()) fail("0 past the input's rank");
                d = a[i];
              }
              if (d == -1) {
                neg = static_cast<int64_t>(i);
                o.push_back(1);
                continue;
              }
              o.push_back(d);
              known *= d;
            }
            if (neg >= 0) {
              if (known == 0) fail("-1 with a zero-sized dimension");
              o[neg] = NumElements(a) / known;
            }
            if (NumElements(o) != NumElements(a)) fail("element count changes");
            break;
          }
          case CopyKind::kFlatten: {
            int64_t ax = s.axis < 0 ? s.axis + static_cast<int64_t>(a.size()) : s.axis;
            if (ax < 0 || ax > static_cast<int64_t>(a.size())) fail("axis out of range");
            int64_t l = 1, rr = 1;
            for (int64_t i = 0; i < static_cast<int64_t>(a.size()); i++) (i < ax ? l : rr) *= a[i];
            o = {l, rr};
            break;
          }
          case CopyKind::kSqueeze: {
            std::vector<bool> drop(a.size(), false);
            if (s.ints.empty()) {
              for (size_t i = 0; i < a.size(); i++) drop[i] = a[i] == 1;
            } else {
              for (int64_t ax : s.ints) {
                int64_t x = NormAxis(ax, a.size(), s);
                if (a[x] != 1) fail("squeezing a dimension that is not 1");
                drop[x] = true;
              }
            }
            for (size_t i = 0; i < a.size(); i++)
              if (!drop[i]) o.push_back(a[i]);
            break;
          }
          case CopyKind::kUnsqueeze: {
            size_t rank = a.size() + s.ints.size();
            std::vector<bool> ins(rank, false);
            for (int64_t ax : s.ints) {
              int64_t x = NormAxis(ax, rank, s);
              if (ins[x]) fail("repeated axes");
              ins[x] = true;
            }
            size_t j = 0;
            for (size_t i = 0; i < rank; i++) o.push_back(ins[i] ? 1 : a.at(j++));
            break;
          }
        }
        sh[s.out[0]] = o;
        break;
      }
      case Op::kConcat: {
        auto o = in(0);
        int64_t ax = NormAxis(s.axis, o.size(), s);
        o[ax] = 0;
        for (size_t i = 0; i < s.in.size(); i++) {
          const auto& x = in(i);
          if (x.size() != o.size()) fail("inputs differ in rank");
          for (size_t d = 0; d < o.size(); d++)
            if (static_cast<int64_t>(d) != ax && x[d] != o[d]) fail("inputs differ outside the axis");
          o[ax] += x[ax];
        }
        sh[s.out[0]] = o;
        break;
      }
      case Op::kTranspose: {
        const auto& a = in(0);
        if (!s.ints.empty()) {
          std::vector<bool> seen(a.size(), false);
          if (s.ints.size() != a.size()) fail("perm's length differs from the input's rank");
          for (int64_t pd : s.ints) {
            if (pd < 0 || pd >= static_cast<int64_t>(a.size()) || seen[pd]) fail("perm is not a permutation");
            seen[pd] = true;
          }
        }
        std::vector<int64_t> o(a.size());
        for (size_t d = 0; d < a.size(); d++) {
          int64_t pd = s.ints.empty() ? static_cast<int64_t>(a.size() - 1 - d) : s.ints.at(d);
          o[d] = a.at(pd);
        }
        sh[s.out[0]] = o;
        break;
      }
      case Op::kSlice: {
        auto o = in(0);
        for (size_t i = 0; i < s.starts.size(); i++) {
          int64_t ax = NormAxis(s.axes[i], o.size(), s);
          int64_t dim = in(0)[ax], st = s.steps[i];
          int64_t b = s.starts[i], e = s.ends[i];
          if (b < 0) b += dim;
          if (e < 0) e += dim;
          if (st > 0) {
            b = std::clamp<int64_t>(b, 0, dim);
            e = std::clamp<int64_t>(e, 0, dim);
            o[ax] = e > b ? (e - b + st - 1) / st : 0;
          } else {
            b = std::clamp<int64_t>(b, 0, dim - 1);
            e = std::clamp<int64_t>(e, -1, dim - 1);
            o[ax] = b > e ? (b - e - st - 1) / (-st) : 0;
          }
        }
        sh[s.out[0]] = o;
        break;
      }
      case Op::kGather: {
        const auto& a = in(0);
        int64_t ax = NormAxis(s.axis, a.size(), s);
        for (int64_t i : s.ints)
          if (i < -a[ax] || i >= a[ax]) fail("index out of range");
        std::vector<int64_t> o(a.begin(), a.begin() + ax);
        o.insert(o.end(), s.idx_shape.begin(), s.idx_shape.end());
        o.insert(o.end(), a.begin() + ax + 1, a.end());
        sh[s.out[0]] = o;
        break;
      }
      case Op::kSplit: {
        const auto& a = in(0);
        int64_t ax = NormAxis(s.axis, a.size(), s);
        size_t k = s.out.size();
        std::vector<int64_t> sizes = s.ints;
        if (sizes.empty()) {
          int64_t each = (a[ax] + static_cast<int64_t>(k) - 1) / static_cast<int64_t>(k);
          for (size_t i = 0; i < k; i++) sizes.push_back(std::min<int64_t>(each, a[ax] - each * static_cast<int64_t>(i)));
        }
        int64_t total = 0;
        for (int64_t x : sizes) total += x;
        if (sizes.size() != k || total != a[ax]) fail("split sizes do not add up to the dimension");
        for (size_t i = 0; i < k; i++) {
          auto o = a;
          o[ax] = sizes[i];
          sh[s.out[i]] = o;
        }
        break;
      }
      case Op::kShape: {
        const auto& a = in(0);
        int64_t rank = static_cast<int64_t>(a.size());
        int64_t b = s.start < 0 ? std::max<int64_t>(0, s.start + rank) : std::min(s.start, rank);
        int64_t e = s.end < 0 ? std::max<int64_t>(0, s.end + rank) : std::min(s.end, rank);
        std::vector<int64_t> data;
        for (int64_t i = b; i < e; i++) data.push_back(a[i]);
        sh[s.out[0]] = {static_cast<int64_t>(data.size())};
        shape_data[s.out[0]] = data;
        break;
      }
      case Op::kFill: {
        int v = s.in[0];
        if (p.values[v].is_const) {
          sh[s.out[0]] = p.values[v].c.i;
        } else {
          sh[s.out[0]] = shape_data[v];
        }
        break;
      }
      case Op::kLstm:
      case Op::kGru: {
        const auto& x = in(0);
        if (x.size() != 3 || x[2] != s.I) fail("X is not [seq, batch, " + std::to_string(s.I) + "]");
        int64_t T = x[0], B = x[1];
        for (size_t i = 1; i < s.in.size(); i++)
          if (s.in[i] >= 0 && sh[s.in[i]] != std::vector<int64_t>{1, B, s.H}) fail("initial state is not [1, batch, hidden]");
        if (s.out[0] >= 0) sh[s.out[0]] = {T, 1, B, s.H};
        for (size_t i = 1; i < s.out.size(); i++)
          if (s.out[i] >= 0) sh[s.out[i]] = {1, B, s.H};
        scratch = std::max(scratch, RnnScratch(s, B));
        break;
      }
    }
  }
  r.scratch.assign(scratch, 0.0f);
  r.store.assign(p.values.size(), {});
  r.ptr.assign(p.values.size(), nullptr);
  for (size_t v = 0; v < p.values.size(); v++) {
    const Value& val = p.values[v];
    if (val.is_const) {
      r.ptr[v] = val.c.type == ONNX_TENSOR_ELEMENT_DATA_TYPE_INT64 ? const_cast<int64_t*>(val.c.i.data())
                                                                   : static_cast<void*>(const_cast<float*>(val.c.f.data()));
    } else if (val.input < 0 && val.output < 0) {
      size_t bytes = NumElements(sh[v]) * ElemSize(val.type);
      r.store[v].assign((bytes + 7) / 8 + 1, 0);
      r.ptr[v] = r.store[v].data();
    }
  }
}

Run& Executor::Resolve(const std::vector<const int64_t*>& dims, const std::vector<size_t>& ranks) {
  for (Run& r : runs_) {
    size_t pos = 0;
    bool same = true;
    for (size_t i = 0; i < dims.size() && same; i++) {
      if (r.key[pos++] != static_cast<int64_t>(ranks[i])) {
        same = false;
        break;
      }
      for (size_t d = 0; d < ranks[i]; d++)
        if (r.key[pos++] != dims[i][d]) {
          same = false;
          break;
        }
    }
    if (same) return r;
  }
  // A bounded cache: a caller cycling through many shapes re-plans the oldest ones.
  if (runs_.size() >= kMaxRuns) runs_.erase(runs_.begin());
  Run r;
  for (size_t i = 0; i < dims.size(); i++) {
    r.key.push_back(static_cast<int64_t>(ranks[i]));
    r.key.insert(r.key.end(), dims[i], dims[i] + ranks[i]);
  }
  r.shapes.assign(plan_.values.size(), {});
  for (size_t i = 0; i < plan_.inputs.size(); i++) r.shapes[plan_.inputs[i]].assign(dims[i], dims[i] + ranks[i]);
  Infer(r);
  runs_.push_back(std::move(r));
  return runs_.back();
}

void Executor::Execute(Run& r) {
  const Plan& p = plan_;
  auto& sh = r.shapes;
  auto F = [&](int v) { return static_cast<float*>(r.ptr[v]); };
  auto CF = [&](int v) -> const float* { return v < 0 ? nullptr : static_cast<const float*>(r.ptr[v]); };
  for (size_t si = 0; si < p.steps.size(); si++) {
    const Step& s = p.steps[si];
    switch (s.op) {
      case Op::kDense: {
        int64_t M = NumElements(sh[s.in[0]]) / s.K;
        HostDense(s, CF(s.in[0]), M, F(s.out[0]));
        break;
      }
      case Op::kBinary: {
        const auto& o = sh[s.out[0]];
        HostBinary(s.code, CF(s.in[0]), CF(s.in[1]), F(s.out[0]), o.data(), r.sa[si].data(), r.sb[si].data(),
                   static_cast<int>(o.size()));
        break;
      }
      case Op::kUnary:
        HostUnary(s, CF(s.in[0]), F(s.out[0]), NumElements(sh[s.out[0]]));
        break;
      case Op::kSoftmax: {
        const auto& a = sh[s.in[0]];
        int64_t ax = NormAxis(s.axis, a.size(), s);
        int64_t outer = 1, len = 1, inner = 1;
        for (int64_t d = 0; d < static_cast<int64_t>(a.size()); d++) {
          if (s.legacy) {
            (d < ax ? outer : len) *= a[d];
          } else {
            (d < ax ? outer : d == ax ? len : inner) *= a[d];
          }
        }
        HostSoftmax(s.log, CF(s.in[0]), F(s.out[0]), outer, len, inner);
        break;
      }
      case Op::kCopy:
        if (r.ptr[s.out[0]] != r.ptr[s.in[0]])
          std::memcpy(r.ptr[s.out[0]], r.ptr[s.in[0]], NumElements(sh[s.in[0]]) * ElemSize(p.values[s.in[0]].type));
        break;
      case Op::kConcat: {
        const auto& o = sh[s.out[0]];
        int64_t ax = NormAxis(s.axis, o.size(), s);
        auto [outer, inner] = OuterInner(o, ax);
        float* out = F(s.out[0]);
        int64_t orow = o[ax] * inner, off = 0;
        for (int v : s.in) {
          int64_t chunk = sh[v][ax] * inner;
          const float* x = CF(v);
          for (int64_t i = 0; i < outer; i++) std::memcpy(out + i * orow + off, x + i * chunk, chunk * sizeof(float));
          off += chunk;
        }
        break;
      }
      case Op::kTranspose: {
        const auto& a = sh[s.in[0]];
        auto st = Strides(a);
        int64_t strides[kMaxRank];
        for (size_t d = 0; d < a.size(); d++) {
          int64_t pd = s.ints.empty() ? static_cast<int64_t>(a.size() - 1 - d) : s.ints[d];
          strides[d] = st[pd];
        }
        const auto& o = sh[s.out[0]];
        HostStridedCopy(CF(s.in[0]), 0, o.data(), strides, static_cast<int>(o.size()), F(s.out[0]));
        break;
      }
      case Op::kSlice: {
        const auto& a = sh[s.in[0]];
        auto st = Strides(a);
        int64_t strides[kMaxRank];
        for (size_t d = 0; d < a.size(); d++) strides[d] = st[d];
        int64_t base = 0;
        for (size_t i = 0; i < s.starts.size(); i++) {
          int64_t ax = NormAxis(s.axes[i], a.size(), s);
          int64_t dim = a[ax], b = s.starts[i];
          if (b < 0) b += dim;
          b = s.steps[i] > 0 ? std::clamp<int64_t>(b, 0, dim) : std::clamp<int64_t>(b, 0, dim - 1);
          base += b * st[ax];
          strides[ax] = st[ax] * s.steps[i];
        }
        const auto& o = sh[s.out[0]];
        if (NumElements(o) > 0)
          HostStridedCopy(CF(s.in[0]), base, o.data(), strides, static_cast<int>(o.size()), F(s.out[0]));
        break;
      }
      case Op::kGather: {
        const auto& a = sh[s.in[0]];
        int64_t ax = NormAxis(s.axis, a.size(), s);
        auto [outer, inner] = OuterInner(a, ax);
        const float* x = CF(s.in[0]);
        float* out = F(s.out[0]);
        int64_t nidx = static_cast<int64_t>(s.ints.size());
        for (int64_t i = 0; i < outer; i++)
          for (int64_t j = 0; j < nidx; j++) {
            int64_t k = s.ints[j] < 0 ? s.ints[j] + a[ax] : s.ints[j];
            std::memcpy(out + (i * nidx + j) * inner, x + (i * a[ax] + k) * inner, inner * sizeof(float));
          }
        break;
      }
      case Op::kSplit: {
        const auto& a = sh[s.in[0]];
        int64_t ax = NormAxis(s.axis, a.size(), s);
        auto [outer, inner] = OuterInner(a, ax);
        const float* x = CF(s.in[0]);
        int64_t row = a[ax] * inner, off = 0;
        for (int v : s.out) {
          int64_t chunk = sh[v][ax] * inner;
          float* out = F(v);
          for (int64_t i = 0; i < outer; i++) std::memcpy(out + i * chunk, x + i * row + off, chunk * sizeof(float));
          off += chunk;
        }
        break;
      }
      case Op::kShape: {
        const auto& a = sh[s.in[0]];
        int64_t rank = static_cast<int64_t>(a.size());
        int64_t b = s.start < 0 ? std::max<int64_t>(0, s.start + rank) : std::min(s.start, rank);
        int64_t* out = static_cast<int64_t*>(r.ptr[s.out[0]]);
        for (int64_t i = 0; i < NumElements(sh[s.out[0]]); i++) out[i] = a[b + i];
        break;
      }
      case Op::kFill: {
        float* out = F(s.out[0]);
        std::fill(out, out + NumElements(sh[s.out[0]]), s.fill);
        break;
      }
      case Op::kLstm: {
        const auto& x = sh[s.in[0]];
        HostLstm(s, CF(s.in[0]), x[0], x[1], CF(s.in[1]), CF(s.in[2]), s.out[0] >= 0 ? F(s.out[0]) : nullptr,
                 s.out[1] >= 0 ? F(s.out[1]) : nullptr, s.out[2] >= 0 ? F(s.out[2]) : nullptr, r.scratch.data());
        break;
      }
      case Op::kGru: {
        const auto& x = sh[s.in[0]];
        HostGru(s, CF(s.in[0]), x[0], x[1], CF(s.in[1]), s.out[0] >= 0 ? F(s.out[0]) : nullptr,
                s.out[1] >= 0 ? F(s.out[1]) : nullptr, r.scratch.data());
        break;
      }
    }
  }
}

OrtStatus* Executor::Compute(OrtKernelContext* ctx) noexcept {
  try {
    std::lock_guard<std::mutex> lock(mu_);
    size_t nin = plan_.inputs.size();
    in_data_.resize(nin);
    in_dims_.resize(nin);
    in_ranks_.resize(nin);
    for (size_t i = 0; i < nin; i++) {
      const OrtValue* v = nullptr;
      Check(g_ort->KernelContext_GetInput(ctx, i, &v), "KernelContext_GetInput");
      if (v == nullptr) throw Error{"input " + std::to_string(i) + " is missing"};
      ONNXTensorElementDataType t;
      Check(g_ort->GetTensorElementTypeAndShapeDataReference(v, &t, &in_dims_[i], &in_ranks_[i]), "input shape");
      if (t != plan_.values[plan_.inputs[i]].type) throw Error{"input " + plan_.values[plan_.inputs[i]].name + " has an unexpected element type"};
      Check(g_ort->GetTensorData(v, &in_data_[i]), "GetTensorData");
    }
    Run& r = Resolve(in_dims_, in_ranks_);
    for (size_t i = 0; i < nin; i++) r.ptr[plan_.inputs[i]] = const_cast<void*>(in_data_[i]);
    for (size_t i = 0; i < plan_.outputs.size(); i++) {
      int v = plan_.outputs[i];
      const auto& shape = r.shapes[v];
      OrtValue* out = nullptr;
      Check(g_ort->KernelContext_GetOutput(ctx, i, shape.data(), shape.size(), &out), "KernelContext_GetOutput");
      void* data = nullptr;
      Check(g_ort->GetTensorMutableData(out, &data), "GetTensorMutableData");
      const Value& val = plan_.values[v];
      if (val.input >= 0 || val.is_const) {
        // An output that is an input or a constant: copied, never written through.
        size_t bytes = NumElements(shape) * ElemSize(val.type);
        if (bytes > 0) std::memcpy(data, r.ptr[v], bytes);
      } else {
        r.ptr[v] = data;
      }
    }
    Execute(r);
    return nullptr;
  } catch (Error& e) {
    return Fail(plan_.name + ": " + e.msg);
  } catch (std::exception& e) {
    return Fail(plan_.name + ": " + e.what());
  } catch (...) {
    return Fail(plan_.name + ": unknown failure");
  }
}

}  // namespace onnxrl_ep
