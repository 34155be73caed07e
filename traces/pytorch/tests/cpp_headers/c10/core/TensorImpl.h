// Stand-in (tests/cpp_headers/README.md): what _cpp.cpp reads of a TensorImpl.
#pragma once
#include <c10/core/StorageImpl.h>
#include <cstddef>
#include <cstdint>

namespace c10 {
enum class ScalarType : int8_t { Float };
enum class Layout : int8_t { Strided };
constexpr Layout kStrided = Layout::Strided;

class IntArrayRef {
public:
  size_t size() const;
  const int64_t &operator[](size_t i) const;
};

struct Device {
  bool is_cpu() const noexcept;
  int8_t index() const noexcept;
};

struct TypeMeta {
  ScalarType toScalarType() const;
};

struct TensorImpl : public intrusive_ptr_target {
  Layout layout() const;
  TypeMeta dtype() const;
  bool has_symbolic_sizes_strides() const;
  int64_t storage_offset() const;
  IntArrayRef sizes() const;
  IntArrayRef strides() const;
  Device device() const;
  const Storage &storage() const;
  const void *data() const;
};
} // namespace c10
