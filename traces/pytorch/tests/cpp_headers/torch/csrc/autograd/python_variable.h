// Stand-in (tests/cpp_headers/README.md): a tensor from its Python object.
#pragma once
#include <Python.h>
#include <c10/core/TensorImpl.h>
#include <cstddef>

namespace at {
class Tensor {
public:
  bool defined() const;
  c10::TensorImpl *unsafeGetTensorImpl() const;
  size_t use_count() const noexcept;
};
} // namespace at

bool THPVariable_Check(PyObject *obj);
const at::Tensor &THPVariable_Unpack(PyObject *obj);
