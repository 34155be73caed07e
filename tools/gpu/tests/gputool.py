"""The scripts of tools/gpu (dashed file names, which no import statement
takes) loaded as modules, for their tests."""
import importlib.util
import os

DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def path(script):
    """Where tools/gpu/<script> is."""
    return os.path.join(DIR, script)


def load(script):
    """tools/gpu/<script> run as a module (named as the file is, its
    dashes underscores), as a test imports it."""
    name = os.path.splitext(script)[0].replace("-", "_")
    spec = importlib.util.spec_from_file_location(name, path(script))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
