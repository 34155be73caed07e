// Stand-in (tests/cpp_headers/README.md): c10's storage.
#pragma once
#include <c10/util/intrusive_ptr.h>
#include <cstddef>

namespace c10 {
struct StorageImpl : public intrusive_ptr_target {
  size_t nbytes() const;
};

struct Storage {
  StorageImpl *unsafeGetStorageImpl() const noexcept;
  size_t nbytes() const;
};
} // namespace c10
