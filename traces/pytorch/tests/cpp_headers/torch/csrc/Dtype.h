// Stand-in (tests/cpp_headers/README.md): torch/csrc/Dtype.h's THPDtype.
#pragma once
#include <Python.h>
#include <c10/core/TensorImpl.h>

struct THPDtype {
  PyObject_HEAD c10::ScalarType scalar_type;
};

bool THPDtype_Check(PyObject *obj);
