"""Makes vLLM's CPU build see a small NUMA node, in every process started with this folder on
PYTHONPATH (vLLM's engine core and workers are separate processes, so a monkeypatch in the test
process would not reach them). Sizes come from SCAFFOLD_TEST_NODE_GIB="total,available".

vLLM reads a node's size in exactly one function, `vllm.utils.cpu_resource_utils.get_memory_node_info`;
it is replaced as soon as that module has been executed, before any other module imports it.
"""

import importlib.abc
import importlib.util
import os
import sys

_TARGET = "vllm.utils.cpu_resource_utils"


class _SmallNode(importlib.abc.MetaPathFinder):
    def __init__(self, total_gib: float, available_gib: float):
        self.total = int(total_gib * (1 << 30))
        self.available = int(available_gib * (1 << 30))

    def find_spec(self, name, path, target=None):
        if name != _TARGET:
            return None
        sys.meta_path.remove(self)  # find the real module, once
        spec = importlib.util.find_spec(name)
        run_module = spec.loader.exec_module
        total, available = self.total, self.available

        def exec_module(module):
            run_module(module)
            real = module.get_memory_node_info

            def small_node(node_id=0):
                measured = real(node_id)
                return module.MemoryNodeInfo(total_memory=total,
                                             available_memory=min(available, measured.available_memory))

            module.get_memory_node_info = small_node

        spec.loader.exec_module = exec_module
        return spec


if os.environ.get("SCAFFOLD_TEST_NODE_GIB"):
    _total, _available = (float(x) for x in os.environ["SCAFFOLD_TEST_NODE_GIB"].split(","))
    sys.meta_path.insert(0, _SmallNode(_total, _available))
