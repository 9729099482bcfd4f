"""Makes Debian's torch 1.13 start torchrun on Python 3.11.

torch 1.13 turns torchrun's --redirects and --tee ("0" by default, "3"
for both streams) into its Std flags by looking for the value among the
members that iterating the flag class yields. Python 3.11 changed what
iterating a Flag yields: only its single-bit members, never 0 (NONE) or a
combination (ALL). So "0" and "3" become None, and the elastic agent dies
with AttributeError: 'NoneType' object has no attribute 'get' before it
starts a worker. Later torch builds the flag from the number, which every
Python accepts; this does the same for 1.13.

The local cluster's process node runs pods with the host's programs, so
the host's torch is their torch: hack/install-deps.sh installs this module,
with a .pth file that imports it at start-up, only where the bug is. It
changes nothing until torch's module is imported, and nothing at all when
torch's own parsing works.
"""

import sys

_MODULE = "torch.distributed.elastic.multiprocessing.api"


def _fix(module):
    std = getattr(module, "Std", None)
    if std is None:
        return
    try:
        if std.from_str("0") is not None and std.from_str("3") is not None:
            return  # a torch that parses its flags itself
    except Exception:
        return
    parse = std.from_str  # checks the syntax and raises torch's own error

    def from_str(cls, vm):
        parsed = parse(vm)
        if isinstance(parsed, dict):
            return {int(i): cls(int(v)) for i, v in (m.split(":") for m in vm.split(","))}
        return cls(int(vm))

    std.from_str = classmethod(from_str)


class _Finder:
    """Finds torch's module as the other finders do, and fixes it once it
    has run."""

    def find_spec(self, name, path, target=None):
        if name != _MODULE:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(name, path, target)
            if spec is not None:
                break
        else:
            return None
        loader = spec.loader
        if loader is None or not hasattr(loader, "exec_module"):
            return spec
        run = loader.exec_module

        def exec_module(module):
            run(module)
            _fix(module)

        loader.exec_module = exec_module
        return spec


def install():
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, _Finder())
