"""The suite's workloads, in report order."""
from __future__ import annotations

from tesched.tools.bench.cell_cases import CELL_WORKLOADS
from tesched.tools.bench.conv_cases import CONV_BN_RELU_WORKLOADS, CONV_CHAIN_WORKLOAD
from tesched.tools.bench.gemm_cases import GEMM_WORKLOADS
from tesched.tools.bench.workloads import Workload


def workloads() -> list[Workload]:
    """Every workload of the suite, in report order."""
    return [*CONV_BN_RELU_WORKLOADS, *CELL_WORKLOADS, CONV_CHAIN_WORKLOAD, *GEMM_WORKLOADS]
