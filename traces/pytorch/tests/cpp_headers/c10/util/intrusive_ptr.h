// Stand-in (tests/cpp_headers/README.md): the raw reference counts.
#pragma once
#include <cstdint>

namespace c10 {
class intrusive_ptr_target {
protected:
  virtual ~intrusive_ptr_target();
};
using weak_intrusive_ptr_target = intrusive_ptr_target;

namespace raw {
namespace intrusive_ptr {
template <typename T> T *make_weak(T *self);
} // namespace intrusive_ptr
namespace weak_intrusive_ptr {
void decref(weak_intrusive_ptr_target *self);
uint32_t use_count(weak_intrusive_ptr_target *self);
} // namespace weak_intrusive_ptr
} // namespace raw
} // namespace c10
